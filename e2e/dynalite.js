// Runs dynalite's command line (the path to its cli.js first, then its
// options) and keeps the server up when a client aborts a request.
// dynalite 4.0.0 throws from a request's 'error' event, so one request cut
// off mid-body (a test whose server shuts down and cancels its background
// work, as a real shutdown does) would end the process and fail every
// test after it. DynamoDB itself shrugs such a request off; so does this.
'use strict'

process.on('uncaughtException', (err) => {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    console.error('dynalite: a client aborted a request; still serving')
    return
  }
  throw err
})

const cli = process.argv[2]
process.argv.splice(2, 1)
require(cli)
