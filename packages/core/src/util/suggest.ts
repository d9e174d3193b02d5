/** "did you mean ...?": the known name closest to a misspelt one, if any is close enough. */

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length];
}

/** The closest of `known` to `name` (case-insensitive), or undefined when none is near. */
export function closest(name: string, known: Iterable<string>): string | undefined {
  const n = name.toLowerCase();
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = distance(n, k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  // Near enough to be a typo: a third of the name, at least 2 edits (snake_case torch
  // names like allow_tf32 still find allowTf32 below through the camel-case form).
  return best !== undefined && bestD <= Math.max(2, Math.floor(n.length / 3)) ? best : undefined;
}

export const camelCase = (s: string): string =>
  s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** " did you mean `x`?" or "" (a snake_case name is tried in camelCase first). */
export function didYouMean(name: string, known: Iterable<string>): string | undefined {
  const list = [...known];
  const camel = camelCase(name);
  if (camel !== name && list.includes(camel)) return camel;
  return closest(name, list);
}
