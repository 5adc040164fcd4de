// An OpenID Provider for the end-to-end run (e2e/run.sh): the npm package
// oidc-provider, a certified implementation, on plain http on 127.0.0.1,
// with one confidential client (ndiro), a fixed set of test accounts and
// the fault suite's numbered ones.
// Its development login and consent forms stand in for a real provider's
// pages: the login form takes an account ID below and any password.
//
// Settings come from the environment: OIDC_PORT, OIDC_CLIENT_ID,
// OIDC_CLIENT_SECRET and OIDC_REDIRECT_URI (the exact https callback of
// the app behind the test proxy). OIDC_STRICT_CLAIMS=1 makes a provider
// that sends the email only from its userinfo endpoint, never in the ID
// token (OIDC Core 5.4; oidc-provider's own default).
//
// Misspelled configuration keys are ignored silently by oidc-provider:
// e2e_test.go checks the behaviour that depends on them (PKCE required,
// email in the ID token).
import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

function setting(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`oidc-provider.mjs: ${name} is not set (e2e/run.sh sets it)`);
    process.exit(2);
  }
  return v;
}

const port = Number(setting('OIDC_PORT'));
const issuer = `http://127.0.0.1:${port}`;

// The account ID is the subject (sub). It is deliberately not the email,
// as with real providers, so the app's logs (which carry user_id) can be
// checked for emails. Keep in step with the accounts in e2e_test.go.
const accounts = {
  'acct-admin-7c1e': { email: 'admin@example.com', email_verified: true, name: 'Ada Admin' },
  'acct-friend-2b9d': { email: 'friend@example.com', email_verified: true, name: 'Fred Friend' },
  'acct-stranger-5f03': { email: 'stranger@example.com', email_verified: true, name: 'Sam Stranger' },
  'acct-unverified-9a44': { email: 'unverified@example.com', email_verified: false, name: 'Una Unverified' },
  // The owner of a diary migrated from local mode (migrate_test.go).
  'acct-migrant-3e8a': { email: 'migrant@example.com', email_verified: true, name: 'Mia Migrant' },
};

// A signing key made for this run only.
const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

const provider = new Provider(issuer, {
  clients: [{
    client_id: setting('OIDC_CLIENT_ID'),
    client_secret: setting('OIDC_CLIENT_SECRET'),
    redirect_uris: [setting('OIDC_REDIRECT_URI')],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  // S256 is the only method oidc-provider offers; a request without a
  // challenge is refused.
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  // false: the scope's claims go into the ID token itself, as Google
  // sends them, besides the userinfo response.
  conformIdTokenClaims: process.env.OIDC_STRICT_CLAIMS === '1',
  features: { devInteractions: { enabled: true } },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  jwks: { keys: [signingKey] },
  async findAccount(ctx, id) {
    // The fault suite's throwaway owners, acct-fault-<n>, whose accounts
    // it deletes.
    const fault = /^acct-fault-(\d{1,4})$/.exec(id);
    const account = accounts[id] ||
      (fault && { email: `fault-${fault[1]}@example.com`, email_verified: true, name: `Fault Owner ${fault[1]}` });
    if (!account) {
      return undefined;
    }
    return {
      accountId: id,
      async claims() {
        return { sub: id, ...account };
      },
    };
  },
});

createServer(provider.callback()).listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
