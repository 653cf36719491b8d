// Floor for archive replay: read every *.jsonl file under a directory
// (recursively) and JSON.parse each line, nothing else. The harness times this
// process from spawn to exit, exactly as it times the server from spawn to its
// first 200 on /api/status, so node start-up cost is on both sides.
//
// Usage: node scripts/bench/reference/replay-baseline.mjs DIR
// Prints one JSON line: {files, records, bytes, peakRssBytes}.
import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

function* jsonlFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* jsonlFiles(full);
    else if (entry.isFile() && entry.name.endsWith('.jsonl')) yield full;
  }
}

// Streams in chunks rather than readFileSync: segment files can exceed V8's
// maximum string length.
async function parseFile(file) {
  let records = 0;
  let rest = '';
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      if (line) { JSON.parse(line); records += 1; }
    }
  }
  if (rest) { JSON.parse(rest); records += 1; }
  return { records, bytes: statSync(file).size };
}

const dir = process.argv[2];
if (!dir) {
  console.error('usage: replay-baseline.mjs DIR');
  process.exit(2);
}
const total = { files: 0, records: 0, bytes: 0 };
for (const file of jsonlFiles(dir)) {
  const { records, bytes } = await parseFile(file);
  total.files += 1;
  total.records += records;
  total.bytes += bytes;
}
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
console.log(JSON.stringify({ ...total, peakRssBytes: hwm ? Number(hwm[1]) * 1024 : null }));
