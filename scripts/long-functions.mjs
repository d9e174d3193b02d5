#!/usr/bin/env node
// Lists functions longer than 80 lines in packages/*/src and apps/*/src. A long function
// passes when the comment right above it says why it stays whole ("Long: ..."): unrolled
// SIMD loops, a table of declarations, one state machine. Part of npm run lint.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const LIMIT = 80;
const repo = new URL("..", import.meta.url).pathname;
const roots = ["packages", "apps"].flatMap((r) =>
  readdirSync(join(repo, r)).map((d) => join(repo, r, d, "src")),
);
const files = (dir) => {
  try {
    return readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(f) ? [p] : [];
    });
  } catch {
    return [];
  }
};

const offenders = [];
for (const file of roots.flatMap(files)) {
  const text = readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    const isFn =
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node);
    if (isFn && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart()).line;
      const end = sf.getLineAndCharacterOfPosition(node.end).line;
      const lines = end - start + 1;
      if (lines > LIMIT) {
        // The comment may sit on the function or on what holds it (const f = () => ...,
        // an object's method), up to the enclosing statement.
        const chain = [node];
        let holder = node;
        while (
          holder.parent &&
          !ts.isSourceFile(holder.parent) &&
          !ts.isClassLike(holder.parent) &&
          !ts.isBlock(holder.parent)
        ) {
          holder = holder.parent;
          chain.push(holder);
        }
        const said = chain.some((n) =>
          (ts.getLeadingCommentRanges(text, n.getFullStart()) ?? []).some((c) =>
            /\bLong:/.test(text.slice(c.pos, c.end)),
          ),
        );
        if (!said) {
          const name = node.name?.getText(sf) ?? holder.name?.getText?.(sf) ?? "(anonymous)";
          offenders.push(`${relative(repo, file)}:${start + 1} ${name}: ${lines} lines`);
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
if (offenders.length > 0) {
  console.error(
    `functions over ${LIMIT} lines without a "Long:" comment saying why:\n  ${offenders.join("\n  ")}`,
  );
  process.exit(1);
}
