#!/usr/bin/env node
/**
 * A stand-in for `curl` used by the start.md walkthrough test when no real curl is installed
 * (or FORUM_TEST_CURL=shim): it translates the small curl subset the guides use into an undici
 * request, so the guide's shell blocks run unchanged.
 *
 * Supported: -s -S (also combined, e.g. -sS), -X/--request METHOD, -H/--header, -d/--data/
 * --data-binary/--data-raw BODY, -w/--write-out FORMAT with %{http_code} and %{stderr}, one URL.
 * Like curl without -f, an HTTP error status still exits 0; a connection failure exits 7.
 * Anything else is refused with exit 2 naming the option, so the guide cannot silently use more.
 */
import { request } from 'undici';

const args = process.argv.slice(2);
let method = null;
let body;
let writeOut = null;
let url = null;
const headers = {};
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const next = () => {
    if (i + 1 >= args.length) fail(`option ${a} needs a value`);
    return args[++i];
  };
  if (/^-[sS]+$/.test(a)) continue;
  else if (a === '-X' || a === '--request') method = next();
  else if (a === '-H' || a === '--header') {
    const h = next();
    const colon = h.indexOf(':');
    headers[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim();
  } else if (a === '-d' || a === '--data' || a === '--data-binary' || a === '--data-raw') body = next();
  else if (a === '-w' || a === '--write-out') writeOut = next();
  else if (!a.startsWith('-') && url === null) url = a;
  else fail(`unsupported option ${a}`);
}
if (url === null) fail('no URL');
method ??= body === undefined ? 'GET' : 'POST';
if (body !== undefined) headers['content-type'] ??= 'application/x-www-form-urlencoded';

function fail(message) {
  process.stderr.write(`curl-shim: ${message}\n`);
  process.exit(2);
}

try {
  const res = await request(url, { method, headers, body });
  process.stdout.write(Buffer.from(await res.body.arrayBuffer()));
  if (writeOut !== null) {
    // %{stderr} switches the rest of the output to stderr, as in curl ≥ 7.63.
    let out = process.stdout;
    for (const part of writeOut.replace(/\\n/g, '\n').split(/(%\{[a-z_]+\})/)) {
      if (part === '%{stderr}') out = process.stderr;
      else if (part === '%{http_code}') out.write(String(res.statusCode));
      else out.write(part);
    }
  }
} catch (err) {
  process.stderr.write(`curl: (7) ${err.message}\n`);
  process.exit(7);
}
