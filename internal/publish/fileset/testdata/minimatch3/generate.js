#!/usr/bin/env node
// Generates goldens.json: what node-glob 7 (minimatch 3), cdnjs's reference
// matcher, selects for real catalog fileMap patterns and for hand-written
// cases, from real files on disk. The Go engine is tested against it
// (fileset.TestMinimatchGoldens). Regenerate with:
//
//   tmp=$(mktemp -d) && (cd $tmp && npm init -y >/dev/null && npm install minimatch@3 glob@7)
//   NODE_PATH=$tmp/node_modules node generate.js ../../../../../catalog CATALOG_SAMPLE_DIR...
//
// (run from this folder; node_modules stays outside the repository).
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const glob = require("glob");
const minimatch = require("minimatch");

const out = { generator: "", trees: [], cases: [] };
out.generator = "node " + process.version + ", glob " + require("glob/package.json").version +
  ", minimatch " + require("minimatch/package.json").version + " (glob.sync(pattern, {cwd, nodir: true}))";

// A deterministic random source per pattern, so reruns give the same file.
function rng(seedText) {
  let h = 2166136261;
  for (const c of seedText) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return () => {
    h = Math.imul(h ^ (h >>> 15), 2246822507);
    h = Math.imul(h ^ (h >>> 13), 3266489909);
    return ((h ^= h >>> 16) >>> 0) / 4294967296;
  };
}

// What releases of front-end libraries hold, beside what the patterns name.
function commonLayout(lib) {
  const b = lib.replace(/\.js$/, "").replace(/^@.*\//, "").toLowerCase();
  return [
    "package.json", "README.md", "LICENSE", "CHANGELOG.md", ".npmignore", ".eslintrc", ".github/workflows/ci.yml",
    `${b}.js`, `${b}.min.js`, `${b}.css`,
    `dist/${b}.js`, `dist/${b}.min.js`, `dist/${b}.js.map`, `dist/${b}.min.js.map`, `dist/${b}.min.map`,
    `dist/${b}.cjs.js`, `dist/${b}.cjs.js.map`, `dist/${b}.esm.js`, `dist/${b}.es.js`, `dist/${b}.amd.js`,
    `dist/${b}.umd.js`, `dist/${b}.umd.min.js`, `dist/${b}.mjs`, `dist/${b}.cjs`, `dist/${b}.css`, `dist/${b}.min.css`,
    `dist/${b}.css.map`, `dist/${b}.d.ts`, `dist/themes/light.css`, `dist/themes/dark.min.css`, "dist/esm/index.js",
    "dist/cjs/index.js", "dist/types/index.d.ts", "dist/.DS_Store", "dist/.cache/x.js", "dist/locale/en.js",
    "dist/locale/de-DE.js", "dist/img/icon.png", "dist/fonts/x.woff2", "dist/fonts/x.ttf", "dist/plugins/a/a.js",
    "lib/index.js", "lib/utils/helpers.js", "src/index.ts", `src/${b}.js`, `src/${b}.scss`, "css/style.css",
    "css/style.min.css", "fonts/icons.woff", "fonts/icons.eot", "img/logo.svg", "images/sprite.png", "locales/fr.json",
    "i18n/es.js", "build/bundle.js", "umd/index.js", "js/app.js", "min/app.min.js", "es/index.js", "esm/index.mjs",
    `tippy.cjs.js.map`, `tippy.js`, `tippy.umd.min.js`, "a.b.c.js", "x.JS", "UPPER.MIN.JS", "file with space.js",
    "weird(1).js", "[brackets].js", "{braces}.js", "!bang.js", "#hash.js", "dist/@scoped/x.js", "é/ü.js",
  ];
}

function pick(r, list) { return list[Math.floor(r() * list.length)]; }

// Paths a pattern is about: its braces expanded, wildcards filled in a few
// ways, then a few near misses.
function instantiate(pattern, r) {
  const outs = new Set();
  let alts = [];
  try { alts = minimatch.braceExpand(pattern); } catch (e) { alts = [pattern]; }
  for (const alt of alts.slice(0, 40)) {
    for (let k = 0; k < 4; k++) {
      let s = alt.replace(/\*\*/g, () => pick(r, ["", "sub", "a/b", ".hidden", "x.y"]));
      for (let guard = 0; guard < 8; guard++) {
        const next = s.replace(/([@!?+*])\(([^()]*)\)/g, (m, t, inner) => {
          const parts = inner.split("|");
          if (t === "!") return pick(r, ["zz", parts[0], parts[0] + "x", "x" + parts[parts.length - 1]]);
          return pick(r, parts.concat(["", parts[0] + parts[0]]));
        });
        if (next === s) break;
        s = next;
      }
      s = s.replace(/\[([!^])?([^\]]*)\]/g, (m, neg, body) => neg ? pick(r, ["z", "a", "-"]) : (body.replace(/\\/g, "")[0] || "a"))
        .replace(/\*/g, () => pick(r, ["", "x", "lib.min", "a.cjs", ".d", "index"]))
        .replace(/\?/g, () => pick(r, ["q", ".", "-", "7"]))
        .replace(/\\(.)/g, "$1");
      const clean = s.split("/").filter((p) => p !== "" && p !== "." && p !== "..").join("/");
      if (!clean) continue;
      outs.add(clean);
      outs.add(clean + ".map");
      outs.add(clean.replace(/\.(js|css)$/, ".min.$1"));
      outs.add(clean.replace(/(\.[a-z]+)$/, ".cjs$1"));
      const slash = clean.lastIndexOf("/");
      outs.add(clean.slice(0, slash + 1) + "." + clean.slice(slash + 1));
    }
  }
  return [...outs];
}

// Lays paths out as files in as few trees as it takes: a path cannot be a
// file in a tree where it is also a folder.
function layOut(paths) {
  const trees = [];
  for (const p of [...new Set(paths)].sort()) {
    let placed = false;
    for (const t of trees) {
      const parts = p.split("/");
      let clash = t.files.has(p) || t.dirs.has(p);
      for (let i = 1; i < parts.length && !clash; i++) clash = t.files.has(parts.slice(0, i).join("/"));
      if (clash) continue;
      t.files.add(p);
      for (let i = 1; i < parts.length; i++) t.dirs.add(parts.slice(0, i).join("/"));
      placed = true;
      break;
    }
    if (!placed) {
      const t = { files: new Set([p]), dirs: new Set() };
      const parts = p.split("/");
      for (let i = 1; i < parts.length; i++) t.dirs.add(parts.slice(0, i).join("/"));
      trees.push(t);
    }
  }
  return trees.map((t) => [...t.files].sort());
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "goldens-"));
let treeCount = 0;
function materialize(files) {
  const dir = path.join(scratch, String(treeCount++));
  for (const f of files) {
    fs.mkdirSync(path.join(dir, path.dirname(f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), "");
  }
  return dir;
}

function normalize(p) {
  return path.posix.normalize(p).replace(/^\.\//, "");
}

// addCases records, for every pattern, what glob selects in each tree.
function addCases(source, patterns, paths) {
  for (const files of layOut(paths)) {
    const dir = materialize(files);
    const tree = out.trees.push(files) - 1;
    for (const pattern of patterns) {
      let match;
      try {
        match = glob.sync(pattern, { cwd: dir, nodir: true }).map(normalize);
      } catch (e) {
        continue;
      }
      match = [...new Set(match)].filter((m) => files.includes(m)).sort();
      out.cases.push({ source, pattern, tree, match });
    }
  }
}

const here = __dirname;
for (const c of JSON.parse(fs.readFileSync(path.join(here, "hand-cases.json"), "utf8"))) {
  addCases("hand", [c.pattern], c.paths);
}

const dirs = process.argv.slice(2);
const seen = new Set();
for (const catalogDir of dirs) {
  for (const letter of fs.readdirSync(catalogDir).sort()) {
    const sub = path.join(catalogDir, letter);
    if (!fs.statSync(sub).isDirectory() || letter.startsWith(".")) continue;
    for (const file of fs.readdirSync(sub).sort()) {
      if (!file.endsWith(".json")) continue;
      let pkg;
      try { pkg = JSON.parse(fs.readFileSync(path.join(sub, file), "utf8")); } catch (e) { continue; }
      const au = pkg.autoupdate;
      if (!au || !Array.isArray(au.fileMap)) continue;
      for (const entry of au.fileMap) {
        const patterns = (entry.files || []).filter((p) => typeof p === "string" && p !== "");
        const key = JSON.stringify(patterns) + "|" + pkg.name;
        if (!patterns.length || seen.has(key)) continue;
        seen.add(key);
        const r = rng(key);
        let paths = commonLayout(String(pkg.name || file));
        for (const p of patterns) paths = paths.concat(instantiate(p, r));
        addCases(letter + "/" + file, patterns, paths);
      }
    }
  }
}

fs.rmSync(scratch, { recursive: true, force: true });
fs.writeFileSync(path.join(here, "goldens.json"), JSON.stringify(out) + "\n");
console.error(`${out.cases.length} cases over ${out.trees.length} trees (${out.trees.reduce((n, t) => n + t.length, 0)} paths)`);
