// Writes a brotli (.br) and a gzip (.gz) copy beside each built script and stylesheet, at
// the strongest settings: the server sends the copy a browser accepts and spends no CPU on
// it per request (api/http/middleware/webapp.py). Node's own zlib, no dependency.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const assets = join(import.meta.dirname, "..", "dist", "assets");
for (const name of readdirSync(assets)) {
  if (!/\.(js|css|svg|json)$/.test(name)) continue;
  const file = join(assets, name);
  const data = readFileSync(file);
  writeFileSync(`${file}.br`, brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
  writeFileSync(`${file}.gz`, gzipSync(data, { level: 9 }));
}
