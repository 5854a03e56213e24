// An S3-compatible server for tests/cli/test_remote_s3.sh: @20minutes/s3rver
// (installed by scripts/setup.sh --test under .cache/s3rver), which checks AWS SigV4
// signatures (account S3RVER / S3RVER), on 127.0.0.1 with a port the kernel
// chooses, written to PORT_FILE once it listens; path-style buckets only.
// usage: node s3_server.js MODULES_DIR DATA_DIR PORT_FILE BUCKET
const fs = require('node:fs');
const path = require('node:path');
const [modules, data, portFile, bucket] = process.argv.slice(2);
const S3rver = require(path.join(modules, '@20minutes/s3rver'));
fs.mkdirSync(data, { recursive: true });
new S3rver({ address: '127.0.0.1', port: 0, directory: data, silent: true, vhostBuckets: false,
             configureBuckets: [{ name: bucket, configs: [] }] })
  .run()
  .then(({ port }) => fs.writeFileSync(portFile, String(port)))
  .catch((e) => { console.error(e); process.exit(1); });
