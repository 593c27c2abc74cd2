/**
 * What the agent's dashboard and alert rules query, and what its /metrics exports: metric names,
 * read from PromQL expressions and from a scrape's TYPE lines.
 */

/** Words of PromQL that are neither metric names nor followed by "(". */
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "inf", "nan"]);

/**
 * The metric names an expression selects: every name outside strings, label matchers, ranges,
 * grouping label lists and Grafana variables that is not a function or an aggregation (a name
 * followed by "("), a keyword or part of a number or a duration.
 */
export function queriedMetrics(expr: string): Set<string> {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, " ")
    .replace(/\$\{[^}]*\}|\$\w+/g, " ");
  const names = new Set<string>();
  for (const [name] of bare.matchAll(/(?<![\w:.])[a-zA-Z_:][\w:]*(?![\w:])(?!\s*\()/g))
    if (!KEYWORDS.has(name.toLowerCase())) names.add(name);
  return names;
}

/**
 * The names a scrape in the Prometheus text format lets a query select: each family of a TYPE
 * line, with a histogram's _bucket, _sum and _count series and a summary's _sum and _count.
 */
export function exportedMetrics(scrape: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    const series =
      type === "histogram" ? ["_bucket", "_sum", "_count"] : type === "summary" ? ["_sum", "_count"] : [];
    for (const suffix of series) names.add(name! + suffix);
  }
  return names;
}
