// Builds the portal: node build.mjs <outdir> [<node_modules dir>] writes
// app.js, app.css, index.html and favicon.svg to <outdir>. Run by CMake
// (web/CMakeLists.txt) after `npm ci` into the build tree's node_modules;
// everything is bundled, so nothing is fetched at run time.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, 'dist'));
const modules = resolve(process.argv[3] || join(here, 'node_modules'));
const { build } = await import(pathToFileURL(join(modules, 'esbuild/lib/main.js')).href);
mkdirSync(out, { recursive: true });
await build({
  nodePaths: [modules],
  entryPoints: { app: join(here, 'src/main.jsx') },
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: out,
  logLevel: 'warning',
  legalComments: 'none',
});
copyFileSync(join(here, 'src/index.html'), join(out, 'index.html'));
copyFileSync(join(here, 'src/favicon.svg'), join(out, 'favicon.svg'));
