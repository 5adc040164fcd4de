package dynamo_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"ndiro/internal/config"
	"ndiro/internal/dynamo"
)

const terraformDir = "../../deploy/terraform"

// parseTerraform returns the body of every .tf file in deploy/terraform.
func parseTerraform(t *testing.T) []*hclsyntax.Body {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(terraformDir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Terraform files in %s: %v", terraformDir, err)
	}
	p := hclparse.NewParser()
	var bodies []*hclsyntax.Body
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", f, diags.Error())
		}
		bodies = append(bodies, file.Body.(*hclsyntax.Body))
	}
	return bodies
}

func blocks(bodies []*hclsyntax.Body, typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range bodies {
		for _, bl := range b.Blocks {
			if bl.Type != typ || len(bl.Labels) < len(labels) {
				continue
			}
			match := true
			for i, l := range labels {
				match = match && bl.Labels[i] == l
			}
			if match {
				out = append(out, bl)
			}
		}
	}
	return out
}

// value evaluates attribute name of b; a missing attribute is cty.NilVal.
func value(t *testing.T, b *hclsyntax.Body, name string, ctx *hcl.EvalContext) cty.Value {
	t.Helper()
	a, ok := b.Attributes[name]
	if !ok {
		return cty.NilVal
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("attribute %s: %s", name, diags.Error())
	}
	return v
}

func str(t *testing.T, b *hclsyntax.Body, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	v := value(t, b, name, ctx)
	if v == cty.NilVal || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// setting renders attribute name of the only inner block typ of b ("" for
// b itself) as text: "true", "PAY_PER_REQUEST", "500"; "missing" if absent
// and "2 blocks" if the block is repeated or absent.
func setting(t *testing.T, b *hclsyntax.Body, typ, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	if typ != "" {
		var found []*hclsyntax.Block
		for _, inner := range b.Blocks {
			if inner.Type == typ {
				found = append(found, inner)
			}
		}
		if len(found) != 1 {
			return fmt.Sprintf("%d blocks", len(found))
		}
		b = found[0].Body
	}
	v := value(t, b, name, ctx)
	switch {
	case v == cty.NilVal:
		return "missing"
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	case v.Type() == cty.Number:
		return v.AsBigFloat().String()
	case v.Type() == cty.String:
		return v.AsString()
	}
	return v.GoString()
}

// tfVars are the variables the drift tests evaluate Terraform with.
var tfVars = &hcl.EvalContext{Variables: map[string]cty.Value{
	"var": cty.ObjectVal(map[string]cty.Value{
		"prefix":                  cty.StringVal("PFX-"),
		"region":                  cty.StringVal("eu-central-1"),
		"max_read_request_units":  cty.NumberIntVal(500),
		"max_write_request_units": cty.NumberIntVal(200),
		// Not the default (35): a value read from the variable shows.
		"photo_versions_days": cty.NumberIntVal(17),
		"instance_profile":    cty.True,
		"ecs_task_role":       cty.True,
	}),
	"aws_s3_bucket": cty.ObjectVal(map[string]cty.Value{"photos": cty.ObjectVal(map[string]cty.Value{
		"id": cty.StringVal("ndiro-photos-test"), "arn": cty.StringVal("arn:aws:s3:::ndiro-photos-test")})}),
	"data": cty.ObjectVal(map[string]cty.Value{
		"aws_caller_identity": cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"account_id": cty.StringVal("123456789012")})}),
		"aws_partition":       cty.ObjectVal(map[string]cty.Value{"current": cty.ObjectVal(map[string]cty.Value{"partition": cty.StringVal("aws")})}),
	}),
}}

// TestTerraformMatchesTables checks that deploy/terraform defines exactly the
// tables of internal/dynamo/table.go (names under the prefix, key schema,
// string key types, TTL attributes), so the two cannot drift, and that every
// table keeps the protections deploy/README.md promises: on-demand billing
// with throughput caps, deletion protection, point-in-time recovery,
// encryption, prevent_destroy, TTL enabled where declared, and no secondary
// indexes (CLAUDE.md: no GSIs).
func TestTerraformMatchesTables(t *testing.T) {
	bodies := parseTerraform(t)
	got := map[string]dynamo.Table{}
	for _, bl := range blocks(bodies, "resource", "aws_dynamodb_table") {
		tb := dynamo.Table{
			Name:         str(t, bl.Body, "name", tfVars),
			PartitionKey: str(t, bl.Body, "hash_key", tfVars),
			SortKey:      str(t, bl.Body, "range_key", tfVars),
		}
		tb.Base = strings.TrimPrefix(tb.Name, "PFX-")
		for _, inner := range bl.Body.Blocks {
			switch inner.Type {
			case "ttl":
				tb.TTLAttribute = str(t, inner.Body, "attribute_name", tfVars)
			case "attribute":
				if ty := str(t, inner.Body, "type", tfVars); ty != "S" {
					t.Errorf("table %s: attribute %s has type %s, want S", tb.Name, str(t, inner.Body, "name", tfVars), ty)
				}
			case "global_secondary_index", "local_secondary_index":
				t.Errorf("table %s has a %s; its keys are designed so that it needs none (CLAUDE.md)", tb.Name, inner.Type)
			}
		}
		settings := map[string]string{}
		want := map[string]string{
			"billing_mode":                                 "PAY_PER_REQUEST",
			"deletion_protection_enabled":                  "true",
			"point_in_time_recovery.enabled":               "true",
			"server_side_encryption.enabled":               "true",
			"lifecycle.prevent_destroy":                    "true",
			"on_demand_throughput.max_read_request_units":  "500",
			"on_demand_throughput.max_write_request_units": "200",
		}
		if tb.TTLAttribute != "" {
			want["ttl.enabled"] = "true"
		}
		for k := range want {
			blockType, name, nested := strings.Cut(k, ".")
			if !nested {
				blockType, name = "", k
			}
			settings[k] = setting(t, bl.Body, blockType, name, tfVars)
		}
		if d := cmp.Diff(want, settings); d != "" {
			t.Errorf("table %s settings (-want +terraform):\n%s", tb.Name, d)
		}
		got[tb.Base] = tb
	}
	want := map[string]dynamo.Table{}
	for _, tb := range dynamo.NewTables("PFX-").All() {
		want[tb.Base] = tb
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("deploy/terraform tables differ from internal/dynamo (-code +terraform):\n%s", d)
	}
}

// TestTerraformBucketIsPrivate checks the photo bucket's protections: every
// public-access block on, owner-enforced ownership, prevent_destroy.
func TestTerraformBucketIsPrivate(t *testing.T) {
	bodies := parseTerraform(t)
	one := func(typ string) *hclsyntax.Body {
		t.Helper()
		bl := blocks(bodies, "resource", typ, "photos")
		if len(bl) != 1 {
			t.Fatalf("%d %s.photos resources, want 1", len(bl), typ)
		}
		return bl[0].Body
	}
	pab := one("aws_s3_bucket_public_access_block")
	got := map[string]string{
		"prevent_destroy":  setting(t, one("aws_s3_bucket"), "lifecycle", "prevent_destroy", tfVars),
		"object_ownership": setting(t, one("aws_s3_bucket_ownership_controls"), "rule", "object_ownership", tfVars),
	}
	for _, k := range []string{"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"} {
		got[k] = setting(t, pab, "", k, tfVars)
	}
	want := map[string]string{
		"prevent_destroy": "true", "object_ownership": "BucketOwnerEnforced",
		"block_public_acls": "true", "block_public_policy": "true", "ignore_public_acls": "true", "restrict_public_buckets": "true",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("bucket settings (-want +terraform):\n%s", d)
	}
	// The app may touch only its two prefixes.
	docs := blocks(bodies, "data", "aws_iam_policy_document", "app")
	for _, st := range docs[0].Body.Blocks {
		if st.Type != "statement" || str(t, st.Body, "sid", nil) != "PhotoObjects" {
			continue
		}
		ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"aws_s3_bucket": cty.ObjectVal(map[string]cty.Value{
			"photos": cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal("arn:aws:s3:::b")})})}}
		var res []string
		for _, v := range value(t, st.Body, "resources", ctx).AsValueSlice() {
			res = append(res, v.AsString())
		}
		if d := cmp.Diff([]string{"arn:aws:s3:::b/users/*", "arn:aws:s3:::b/pending/*"}, res); d != "" {
			t.Errorf("photo object resources (-want +terraform):\n%s", d)
		}
	}
}

// iamActions returns the IAM actions an SDK operation needs, where they
// differ from its name (AWS's service authorization reference).
func iamActions(op string) []string {
	switch op {
	case "s3:HeadBucket", "s3:ListObjectsV2":
		return []string{"s3:ListBucket"}
	case "s3:HeadObject":
		return []string{"s3:GetObject"}
	case "s3:CopyObject": // read the source, write the copy
		return []string{"s3:GetObject", "s3:PutObject"}
	case "s3:DeleteObjects":
		return []string{"s3:DeleteObject"}
	case "s3:CreateMultipartUpload", "s3:UploadPart", "s3:CompleteMultipartUpload":
		return []string{"s3:PutObject"}
	}
	return []string{op}
}

// localOnly are actions the app's policy does not need: SDK operations
// only local mode and tests use (AWS tables and buckets come from
// Terraform), and what only `ndiro backup` does on its destination, which
// is not the app's bucket and is reached with the operator's credentials
// (deploy/README.md, "Account archives").
var localOnly = map[string]bool{"dynamodb:CreateTable": true, "dynamodb:DeleteTable": true, "s3:AbortMultipartUpload": true}

// TestIAMPolicyMatchesCode checks that the app's IAM policy grants exactly
// the DynamoDB and S3 actions the code (outside tests) calls.
func TestIAMPolicyMatchesCode(t *testing.T) {
	inputs := regexp.MustCompile(`&(dynamodb|s3)\.(\w+)Input\{`)
	used := map[string]bool{}
	for _, dir := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "apptest") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range inputs.FindAllStringSubmatch(string(src), -1) {
				for _, action := range iamActions(m[1] + ":" + m[2]) {
					if !localOnly[action] {
						used[action] = true
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	granted := map[string]bool{}
	docs := blocks(parseTerraform(t), "data", "aws_iam_policy_document", "app")
	if len(docs) != 1 {
		t.Fatalf("found %d app policy documents, want 1", len(docs))
	}
	for _, st := range docs[0].Body.Blocks {
		if st.Type != "statement" {
			continue
		}
		v, diags := st.Body.Attributes["actions"].Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		for _, a := range v.AsValueSlice() {
			granted[a.AsString()] = true
		}
	}
	if d := cmp.Diff(keys(used), keys(granted)); d != "" {
		t.Errorf("IAM actions differ from the SDK calls in the code (-code +policy):\n%s", d)
	}
}

// TestTerraformPhotoVersions checks the bucket's versioning and what its
// lifecycle rules do with old versions (deploy/README.md, "Backups and
// restore"): versioning on; a deleted or replaced photo under users/ kept
// photo_versions_days as a noncurrent version, then removed with its
// delete marker; pending/ uploads and their old versions gone after a
// day; abandoned multipart uploads after a day. photo_versions_days
// defaults to 35, the tables' point-in-time recovery window.
func TestTerraformPhotoVersions(t *testing.T) {
	bodies := parseTerraform(t)
	versioning := blocks(bodies, "resource", "aws_s3_bucket_versioning", "photos")
	if len(versioning) != 1 {
		t.Fatalf("%d aws_s3_bucket_versioning.photos, want 1", len(versioning))
	}
	if got := setting(t, versioning[0].Body, "versioning_configuration", "status", tfVars); got != "Enabled" {
		t.Errorf("bucket versioning status %q, want Enabled", got)
	}
	if got := reference(t, versioning[0].Body.Attributes["bucket"]); got != "aws_s3_bucket.photos.id" {
		t.Errorf("versioning applies to %s, want aws_s3_bucket.photos.id", got)
	}
	lifecycle := blocks(bodies, "resource", "aws_s3_bucket_lifecycle_configuration", "photos")
	if len(lifecycle) != 1 {
		t.Fatalf("%d aws_s3_bucket_lifecycle_configuration.photos, want 1", len(lifecycle))
	}
	var deps []string
	if a := lifecycle[0].Body.Attributes["depends_on"]; a != nil {
		for _, e := range a.Expr.(*hclsyntax.TupleConsExpr).Exprs {
			deps = append(deps, reference(t, &hclsyntax.Attribute{Expr: e}))
		}
	}
	if !slices.Contains(deps, "aws_s3_bucket_versioning.photos") {
		t.Errorf("lifecycle depends_on %q, want aws_s3_bucket_versioning.photos (its rules act on versions)", deps)
	}
	got := map[string]map[string]string{}
	for _, r := range lifecycle[0].Body.Blocks {
		if r.Type != "rule" {
			continue
		}
		got[str(t, r.Body, "id", tfVars)] = map[string]string{
			"status":                    setting(t, r.Body, "", "status", tfVars),
			"prefix":                    setting(t, r.Body, "filter", "prefix", tfVars),
			"expiration days":           setting(t, r.Body, "expiration", "days", tfVars),
			"expired delete markers":    setting(t, r.Body, "expiration", "expired_object_delete_marker", tfVars),
			"noncurrent days":           setting(t, r.Body, "noncurrent_version_expiration", "noncurrent_days", tfVars),
			"abort multipart days":      setting(t, r.Body, "abort_incomplete_multipart_upload", "days_after_initiation", tfVars),
			"noncurrent transition":     fmt.Sprint(len(blocksOf(r.Body, "noncurrent_version_transition"))),
			"transition to other class": fmt.Sprint(len(blocksOf(r.Body, "transition"))),
		}
	}
	rule := func(prefix, days, markers, noncurrent, abort string) map[string]string {
		return map[string]string{"status": "Enabled", "prefix": prefix, "expiration days": days, "expired delete markers": markers,
			"noncurrent days": noncurrent, "abort multipart days": abort, "noncurrent transition": "0", "transition to other class": "0"}
	}
	want := map[string]map[string]string{
		"abort-incomplete-multipart-uploads": rule("missing", "0 blocks", "0 blocks", "0 blocks", "1"),
		"expire-old-photo-versions":          rule("users/", "missing", "true", "17", "0 blocks"),
		"expire-pending-uploads":             rule("pending/", "1", "missing", "1", "0 blocks"),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("bucket lifecycle rules (-want +terraform):\n%s", d)
	}
	def := blocks(bodies, "variable", "photo_versions_days")
	if len(def) != 1 || setting(t, def[0].Body, "", "default", nil) != "35" {
		t.Errorf("photo_versions_days should default to 35 days, the tables' point-in-time recovery window")
	}
	for _, tb := range blocks(bodies, "resource", "aws_dynamodb_table") {
		if p := setting(t, tb.Body, "point_in_time_recovery", "recovery_period_in_days", tfVars); p != "missing" && p != "35" {
			t.Errorf("table %s keeps %s days of recovery; photo_versions_days assumes 35", tb.Labels[1], p)
		}
	}
}

// blocksOf returns b's inner blocks of type typ.
func blocksOf(b *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, inner := range b.Blocks {
		if inner.Type == typ {
			out = append(out, inner)
		}
	}
	return out
}

// reference renders an attribute that refers to another object, such as
// "aws_iam_role.instance[0].name"; "missing" for no attribute, and the
// expression's type for anything but a plain reference.
func reference(t *testing.T, a *hclsyntax.Attribute) string {
	t.Helper()
	if a == nil {
		return "missing"
	}
	tr, diags := hcl.AbsTraversalForExpr(a.Expr)
	if diags.HasErrors() {
		return fmt.Sprintf("%T", a.Expr)
	}
	var sb strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			sb.WriteString(s.Name)
		case hcl.TraverseAttr:
			sb.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			sb.WriteString("[" + s.Key.AsBigFloat().String() + "]")
		}
	}
	return sb.String()
}

// tfFunctions are the Terraform functions the variables' validations and
// the outputs use.
var tfFunctions = map[string]function.Function{
	"can":    tryfunc.CanFunc,
	"regex":  stdlib.RegexFunc,
	"floor":  stdlib.FloorFunc,
	"join":   stdlib.JoinFunc,
	"concat": stdlib.ConcatFunc,
}

// withVars returns tfVars with the var object's attributes replaced by vars.
func withVars(vars map[string]cty.Value) *hcl.EvalContext {
	all := tfVars.Variables["var"].AsValueMap()
	for k, v := range vars {
		all[k] = v
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: tfFunctions}
	for k, v := range tfVars.Variables {
		ctx.Variables[k] = v
	}
	ctx.Variables["var"] = cty.ObjectVal(all)
	return ctx
}

// TestTerraformEnvFile checks `terraform output -raw env_file`: NAME=value
// lines (and # comments) that config.Load reads, with the remaining
// required settings added, into the region, bucket and prefix Terraform
// made; the same values as app_environment; no NDIRO_ADDR, which each way
// of running ndiro sets itself (a container given 127.0.0.1 cannot be
// reached).
func TestTerraformEnvFile(t *testing.T) {
	bodies := parseTerraform(t)
	locals := blocks(bodies, "locals")
	if len(locals) != 1 {
		t.Fatalf("%d locals blocks, want 1", len(locals))
	}
	ctx := withVars(nil)
	ctx.Variables["local"] = cty.ObjectVal(map[string]cty.Value{"app_environment": value(t, locals[0].Body, "app_environment", ctx)})
	out := blocks(bodies, "output", "env_file")
	if len(out) != 1 {
		t.Fatalf("%d env_file outputs, want 1", len(out))
	}
	text := str(t, out[0].Body, "value", ctx)
	env := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !regexp.MustCompile(`^[A-Z][A-Z0-9_]*=[^\s"'$#]+$`).MatchString(line) {
			t.Errorf("env_file line %d %q: want NAME=value, no spaces, quotes or $", i+1, line)
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	want := map[string]string{"NDIRO_MODE": "aws", "AWS_REGION": "eu-central-1", "NDIRO_TABLE_PREFIX": "PFX-", "NDIRO_BUCKET": "ndiro-photos-test"}
	if d := cmp.Diff(want, env); d != "" {
		t.Errorf("env_file settings (-want +terraform):\n%s\n%s", d, text)
	}
	if !strings.HasSuffix(text, "\n") {
		t.Errorf("env_file does not end in a newline; appending to it would join two lines:\n%q", text)
	}
	// The same map as the app_environment output.
	appEnv := blocks(bodies, "output", "app_environment")
	if len(appEnv) != 1 || reference(t, appEnv[0].Body.Attributes["value"]) != "local.app_environment" {
		t.Error("output app_environment should be local.app_environment, the env file's source")
	}
	// config.Load reads these names into what Terraform made.
	more := map[string]string{"NDIRO_BASE_URL": "https://diary.example.org", "ADMIN_EMAILS": "you@example.org",
		"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "secret"}
	cfg, err := config.Load(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return more[k]
	})
	if err != nil {
		t.Fatalf("config.Load of the env file: %v", err)
	}
	gotCfg := []string{string(cfg.Mode), cfg.Region, cfg.Bucket, cfg.TablePrefix}
	if d := cmp.Diff([]string{string(config.ModeAWS), "eu-central-1", "ndiro-photos-test", "PFX-"}, gotCfg); d != "" {
		t.Errorf("config from the env file (-want +got):\n%s", d)
	}
}

// TestTerraformVariableValidation checks that Terraform refuses a table
// prefix exactly when the app does (NDIRO_TABLE_PREFIX), so an env file
// never holds a prefix ndiro refuses at start, and that photo_versions_days
// is a whole number of days S3 accepts.
func TestTerraformVariableValidation(t *testing.T) {
	bodies := parseTerraform(t)
	valid := func(name string, v cty.Value) bool {
		t.Helper()
		vars := blocks(bodies, "variable", name)
		if len(vars) != 1 {
			t.Fatalf("%d variables %s, want 1", len(vars), name)
		}
		checks := blocksOf(vars[0].Body, "validation")
		if len(checks) == 0 {
			t.Fatalf("variable %s has no validation", name)
		}
		ok := true
		for _, c := range checks {
			ok = ok && value(t, c.Body, "condition", withVars(map[string]cty.Value{name: v})).True()
		}
		return ok
	}
	for _, prefix := range []string{"ndiro-", "", "a.b_c-9", "UPPER.", strings.Repeat("p", 200), strings.Repeat("p", 201), "two words", "semi;colon", "quote\"", "ümlaut", "new\nline", "$HOME"} {
		_, err := config.Load(func(k string) string {
			return map[string]string{"NDIRO_MODE": "local", "NDIRO_TABLE_PREFIX": prefix}[k]
		})
		if got, want := valid("prefix", cty.StringVal(prefix)), err == nil; got != want {
			t.Errorf("prefix %q: Terraform accepts it = %v, the app = %v (%v)", prefix, got, want, err)
		}
	}
	for days, want := range map[float64]bool{1: true, 35: true, 365: true, 0: false, -1: false, 366: false, 1.5: false} {
		if got := valid("photo_versions_days", cty.NumberFloatVal(days)); got != want {
			t.Errorf("photo_versions_days = %v accepted %v, want %v", days, got, want)
		}
	}
}

// TestTerraformRoles checks the IAM roles ndiro can run as: an EC2
// instance profile (on by default) and an ECS task role (off by default),
// each trusted by that service alone (ECS only for this account's tasks
// in this region), each holding exactly the app policy and nothing else.
func TestTerraformRoles(t *testing.T) {
	bodies := parseTerraform(t)
	one := func(typ, name string) *hclsyntax.Body {
		t.Helper()
		bl := blocks(bodies, "resource", typ, name)
		if len(bl) != 1 {
			t.Fatalf("%d %s.%s, want 1", len(bl), typ, name)
		}
		return bl[0].Body
	}
	count := func(b *hclsyntax.Body, variable string, on bool) string {
		return setting(t, b, "", "count", withVars(map[string]cty.Value{variable: cty.BoolVal(on)}))
	}
	for _, r := range []struct {
		role, variable, def, trust, profile string
	}{
		{role: "instance", variable: "instance_profile", def: "true", trust: "ec2_assume", profile: "app"},
		{role: "task", variable: "ecs_task_role", def: "false", trust: "ecs_tasks_assume"},
	} {
		role := one("aws_iam_role", r.role)
		attach := one("aws_iam_role_policy_attachment", r.role)
		got := map[string]string{
			"trust":           reference(t, role.Attributes["assume_role_policy"]),
			"name":            str(t, role, "name", tfVars),
			"inline policies": fmt.Sprint(len(blocksOf(role, "inline_policy"))),
			"managed arns":    reference(t, role.Attributes["managed_policy_arns"]),
			"attached to":     reference(t, attach.Attributes["role"]),
			"policy":          reference(t, attach.Attributes["policy_arn"]),
			"count when on":   count(role, r.variable, true) + " " + count(attach, r.variable, true),
			"count when off":  count(role, r.variable, false) + " " + count(attach, r.variable, false),
			"default":         setting(t, blocks(bodies, "variable", r.variable)[0].Body, "", "default", nil),
		}
		want := map[string]string{
			"trust": "data.aws_iam_policy_document." + r.trust + ".json", "name": "PFX-" + r.role,
			"inline policies": "0", "managed arns": "missing",
			"attached to": "aws_iam_role." + r.role + "[0].name", "policy": "aws_iam_policy.app.arn",
			"count when on": "1 1", "count when off": "0 0", "default": r.def,
		}
		if r.profile != "" {
			p := one("aws_iam_instance_profile", r.profile)
			got["profile role"] = reference(t, p.Attributes["role"])
			got["profile count"] = count(p, r.variable, true) + " " + count(p, r.variable, false)
			want["profile role"], want["profile count"] = "aws_iam_role."+r.role+"[0].name", "1 0"
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("role %s (-want +terraform):\n%s", r.role, d)
		}
	}
	// Nothing else gives either role a policy.
	if n := len(blocks(bodies, "resource", "aws_iam_role_policy")) + len(blocks(bodies, "resource", "aws_iam_role_policy_attachment")); n != 2 {
		t.Errorf("%d policies on roles, want the 2 attachments of the app policy", n)
	}

	trust := func(name string) map[string]string {
		t.Helper()
		docs := blocks(bodies, "data", "aws_iam_policy_document", name)
		if len(docs) != 1 {
			t.Fatalf("%d trust documents %s, want 1", len(docs), name)
		}
		out := map[string]string{}
		for i, st := range blocksOf(docs[0].Body, "statement") {
			ctx := withVars(nil)
			out[fmt.Sprintf("%d actions", i)] = value(t, st.Body, "actions", ctx).GoString()
			out[fmt.Sprintf("%d effect", i)] = setting(t, st.Body, "", "effect", ctx)
			for _, p := range blocksOf(st.Body, "principals") {
				out[fmt.Sprintf("%d principal %s", i, str(t, p.Body, "type", ctx))] = value(t, p.Body, "identifiers", ctx).GoString()
			}
			for _, c := range blocksOf(st.Body, "condition") {
				out[fmt.Sprintf("%d %s %s", i, str(t, c.Body, "test", ctx), str(t, c.Body, "variable", ctx))] = value(t, c.Body, "values", ctx).GoString()
			}
		}
		return out
	}
	list := func(s ...string) string {
		var vs []cty.Value
		for _, v := range s {
			vs = append(vs, cty.StringVal(v))
		}
		return cty.TupleVal(vs).GoString()
	}
	wantTrust := map[string]map[string]string{
		"ec2_assume": {"0 actions": list("sts:AssumeRole"), "0 effect": "missing", "0 principal Service": list("ec2.amazonaws.com")},
		"ecs_tasks_assume": {"0 actions": list("sts:AssumeRole"), "0 effect": "missing", "0 principal Service": list("ecs-tasks.amazonaws.com"),
			"0 StringEquals aws:SourceAccount": list("123456789012"),
			"0 ArnLike aws:SourceArn":          list("arn:aws:ecs:eu-central-1:123456789012:*")},
	}
	for name, want := range wantTrust {
		if d := cmp.Diff(want, trust(name)); d != "" {
			t.Errorf("trust policy %s (-want +terraform):\n%s", name, d)
		}
	}
}

// TestTerraformFormatted checks that every .tf file is as terraform fmt
// writes it (hclwrite.Format is the formatter terraform fmt runs).
func TestTerraformFormatted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(terraformDir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(hclwrite.Format(b)), string(b)); d != "" {
			t.Errorf("%s is not formatted (terraform fmt) (-want +got):\n%s", f, d)
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
