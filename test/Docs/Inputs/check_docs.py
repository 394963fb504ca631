#!/usr/bin/env python3
"""Checks titan's Markdown docs against the source tree and the tools.

For each document given:
- paths: every repository path it names exists. A path is a word starting
  with a top-level folder (`lib/...`, `runtime/...`, ...; in backticks or
  not), a backticked `titan/...` or `titanrt/...` header, or a backticked
  file name with a source extension (`Schedule.cpp`). `{a,b}` expands,
  `<X>` and `*` match anything, a path without extension may name a file
  stem (`lib/Import/LlamaImporter`). Names of other projects' files that
  the docs quote are listed in external-names.txt.
- passes: every word shaped like a pass (`titan-*`, `dist-*`, `kernel-*`)
  is a pass or pass pipeline titan-opt registers, or one of titan's tools.
- config keys: every `section.key` (backticked, or `--section.key`) whose
  section titan-compile knows is one of its keys or aliases.
- ops and attributes: every backticked `titan.x`, `dist.x`, `kernel.x` is
  named by the generated dialect docs or the compiler's sources.
- links: every relative Markdown link's file exists, and its `#anchor`
  is a heading of that file (GitHub's slugs).
- the map of the tree (README's fenced block starting `include/titan/,
  lib/`): every folder it lists exists.
- placeholders: no `TODO(lead)` is left.
Prints one line per problem and exits 1 if there is any.
"""

import argparse
import glob
import os
import re
import sys

TOP_DIRS = ("include", "lib", "runtime", "tools", "test", "unittests",
            "scripts", "bench", "docs", "models", "cmake", ".ci")
SOURCE_EXTS = {"cpp", "h", "td", "def", "cu", "cuh", "py", "sh", "test",
               "mlir", "cmake"}
SKIP_DIRS = {".git", ".venv", ".deps", "outputs", "__pycache__", ".gl"}
# Words shaped like passes that are not: the tools, a build target, the
# flight recorder's format name.
NOT_PASSES = {"titan-compile", "titan-opt", "titan-tokenize",
              "titan-comm-bench", "titan-doc", "titan-flight-recorder"}
# File name extensions, so that `metrics.jsonl` is not read as a key.
FILE_EXTS = {"json", "jsonl", "safetensors", "toml", "md", "bin", "txt",
             "py", "csv", "svg", "png"}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class Tree:
    """The source tree's files and folders, relative to its root."""

    def __init__(self, root):
        self.root = root
        self.files = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and
                           not (rel == "." and d.startswith("build"))]
            for name in filenames:
                self.files.append(os.path.normpath(os.path.join(rel, name)))
        self.basenames = {os.path.basename(f) for f in self.files}

    def exists(self, pattern):
        for alt in expand_braces(pattern):
            alt = re.sub(r"<[^<>/]*>", "*", alt)
            full = os.path.join(self.root, alt)
            if glob.glob(full) or glob.glob(full + ".*"):
                return True
        return False

    def has_suffix(self, suffix):
        return any(f == suffix or f.endswith("/" + suffix) for f in self.files)


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for part in m.group(1).split(","):
        out += expand_braces(text[:m.start()] + part + text[m.end():])
    return out


def strip_fences(text):
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def backticked(text):
    """(position, content) of each inline code span outside fences."""
    for m in re.finditer(r"`([^`]+)`", strip_fences(text)):
        yield m.start(1), " ".join(m.group(1).split())


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for line in strip_fences(text).split("\n"):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


PATH_RE = re.compile(r"(?<![\w/.$<>-])((?:%s)/[\w./{},*<>+-]*)" %
                     "|".join(re.escape(d) for d in TOP_DIRS))


def clean_path(p):
    p = p.rstrip(".,;:)'\"")
    return p


def check_paths(doc, text, tree, external, problems):
    seen = set()
    folder = os.path.dirname(doc)

    def exists(p):
        return tree.exists(p) or (folder and tree.exists(os.path.join(folder, p)))

    def bad(pos, what):
        key = (what, line_of(text, pos))
        if key not in seen:
            seen.add(key)
            problems.append("%s:%d: no such path: %s" % (doc, key[1], what))

    for m in PATH_RE.finditer(text):
        p = clean_path(m.group(1))
        if "..." in p or p.count("/") < 1 or p.endswith("/*"):
            continue
        if not exists(p):
            bad(m.start(1), p)
    for pos, code in backticked(text):
        for word in code.split():
            word = clean_path(word)
            if word in external:
                continue
            if re.match(r"(titan|titanrt)/", word):
                for alt in expand_braces(word):
                    alt = re.sub(r"<[^<>/]*>", "*", alt)
                    if not (tree.exists("include/" + alt) or
                            tree.exists("runtime/include/" + alt)):
                        bad(pos, word)
                continue
            m = re.fullmatch(r"[\w.+-]+\.(\w+)", word)
            if m and m.group(1) in SOURCE_EXTS:
                if word not in tree.basenames:
                    bad(pos, word)
                continue
            m = re.fullmatch(r"([\w.+-]+/)+[\w.+-]+\.(\w+)", word)
            if m and m.group(2) in SOURCE_EXTS and not word.startswith(TOP_DIRS):
                if not tree.has_suffix(word):
                    bad(pos, word)


PASS_RE = re.compile(r"(?<![\w./-])((?:titan|dist|kernel)-[a-z0-9]+(?:-[a-z0-9]+)*)(?![\w-])")


def check_passes(doc, text, passes, problems):
    for m in PASS_RE.finditer(text):
        name = m.group(1)
        if name not in passes and name not in NOT_PASSES:
            problems.append("%s:%d: no such pass or pipeline: %s" %
                            (doc, line_of(text, m.start()), name))


def check_keys(doc, text, keys, external, problems):
    sections = {k.rsplit(".", 1)[0] for k in keys}
    cands = [(pos, c) for pos, c in backticked(text)]
    cands += [(m.start(1), m.group(1)) for m in
              re.finditer(r"(?<![\w-])--([a-z_][\w.]*)", strip_fences(text))]
    for pos, code in cands:
        word = code.split()[0].split("=")[0]
        word = word[2:] if word.startswith("--") else word
        word = word.rstrip(".,;:")
        if "." not in word:
            continue
        section, key = word.rsplit(".", 1)
        if section in sections and re.fullmatch(r"\w+", key) and \
                key not in FILE_EXTS and word not in keys and \
                word not in external:
            problems.append("%s:%d: no such config key: %s" %
                            (doc, line_of(text, pos), word))


def check_ops(doc, text, corpus, problems):
    for pos, code in backticked(text):
        for m in re.finditer(r"(?<![\w#.!])((?:titan|dist|kernel)\.[a-z_][a-z0-9_]*)",
                             code):
            if m.group(1) not in corpus:
                problems.append("%s:%d: no op or attribute named %s" %
                                (doc, line_of(text, pos), m.group(1)))


def check_links(doc, name, text, problems):
    here = os.path.dirname(doc)
    for m in re.finditer(r"\]\(([^)\s]+)\)", strip_fences(text)):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(here, path)) if path else doc
        where = "%s:%d" % (name, line_of(text, m.start()))
        if not os.path.exists(dest):
            problems.append("%s: link to a missing file: %s" % (where, target))
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(read(dest)):
            problems.append("%s: no heading for the anchor: %s" % (where, target))


def check_layout_block(doc, text, tree, problems):
    """A fenced block that maps the tree (README's "Where things live"):
    each folder it names at the start of a line exists, the indented ones
    under include/titan/ or lib/."""
    for m in re.finditer(r"(?ms)^```\n(include/titan/, lib/.*?)^```", text):
        first = line_of(text, m.start(1))
        for i, line in enumerate(m.group(1).split("\n")):
            w = re.match(r"((?:  )?)([\w.-]+(?:/[\w.-]+)*/)(?:\s|$)", line)
            if not w:
                continue
            folder = w.group(2)
            if w.group(1):
                ok = tree.exists("include/titan/" + folder) or \
                    tree.exists("lib/" + folder)
            else:
                ok = tree.exists(folder)
            if not ok:
                problems.append("%s:%d: no such folder: %s" %
                                (doc, first + i, folder))


def check_placeholders(doc, text, problems):
    for m in re.finditer(r"TODO\(lead\)", text):
        problems.append("%s:%d: placeholder left: %s" %
                        (doc, line_of(text, m.start()),
                         text[m.start():].split("\n")[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the source tree")
    ap.add_argument("--passes", required=True,
                    help="file: the registered passes and pipelines")
    ap.add_argument("--keys", required=True,
                    help="file: titan-compile --list-config-keys=tsv")
    ap.add_argument("docs", nargs="+")
    args = ap.parse_args()

    tree = Tree(args.root)
    passes = set(read(args.passes).split())
    keys = {line.split("\t")[0] for line in read(args.keys).splitlines()
            if line.strip()}
    here = os.path.dirname(os.path.abspath(__file__))
    external = {line.strip() for line in
                read(os.path.join(here, "external-names.txt")).splitlines()
                if line.strip() and not line.startswith("#")}
    corpus = []
    for pattern in ("docs/Dialects/*.md", "include/**/*.td", "include/**/*.h",
                    "lib/**/*.cpp", "lib/**/*.h"):
        for f in glob.glob(os.path.join(args.root, pattern), recursive=True):
            corpus.append(read(f))
    corpus = "\n".join(corpus)

    problems = []
    for doc in args.docs:
        text = read(doc)
        name = os.path.relpath(doc, args.root)
        check_paths(name, text, tree, external, problems)
        check_passes(name, text, passes, problems)
        check_keys(name, text, keys, external, problems)
        check_ops(name, text, corpus, problems)
        check_links(doc, name, text, problems)
        check_layout_block(name, text, tree, problems)
        check_placeholders(name, text, problems)
    problems = list(dict.fromkeys(problems))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
