/**
 * The filter corpus the real-kernel tests run: hand-written expressions (every operator and alias,
 * prefixes, `*`, port-only and service-name forms, and/or/not, parentheses, implied and) and
 * expressions generated from the grammar with a fixed seed, all spelled the way `ss` reads them
 * (tokens separated by blanks), with the scene's addresses and ports (differential-scene.ts).
 *
 * The corpus stays inside what sockdiag and ss mean alike. ss runs each condition twice, in the kernel
 * and in user space, and shows a socket only when both accept it. The two halves disagree on
 * `autobound` (kernel: "port not bound by the program"; user space: "port in ip_local_port_range") and
 * on address prefixes that match the raw address words of the other family (user space ignores the
 * family, so `0.0.0.0` matches `::`, and `[::]` matches `0.0.0.0`). When such conditions are never
 * negated, and one expression does not mix the two kinds, "both halves accept" reduces to the kernel's
 * meaning, which is sockdiag's; otherwise it does not. So those conditions appear here only in positive
 * position (POSITIVE_ONLY_HOSTS, `autobound`), and the documented differences are asserted apart, in
 * differential.test.ts. `dev`, `cgroup` (ss 6.1 sends cgroup id 0) and host names (which sockdiag
 * rejects) are left out altogether.
 */
import fc from "fast-check";

/** Hand-written expressions, each one line of ss filter words. */
export const HAND_WRITTEN: readonly string[] = [
  // src/dst: addresses, prefixes (host bits kept), short IPv4 forms, ports, `*`.
  "src 10.1.0.1",
  "src = 10.1.0.1",
  "src 10.1.0.1:80",
  "src 10.1.0.1:*",
  "src 10.1.0.0/24",
  "src 10.1.0.77/24",
  "src 10.1.0.4/30",
  "dst 10.1.0.0/24:53",
  "src 10.1.0.0/24:5000",
  "src 10.1",
  "src 10.1/16",
  "dst 10/8",
  "dst 10.0.0.0/8",
  "src 127.0.0.1",
  "src 127.0.0.0/8",
  "src 192.168.7.1:1023",
  "dst 192.168.7.1",
  "src 0.0.0.0",
  "src 0.0.0.0/0",
  "dst 0.0.0.0",
  "dst 0.0.0.0/0",
  "src fd00::/64",
  "src [fd00::1]",
  "src [fd00::1]:80",
  "dst [fd00::/64]:53",
  "dst [fd00::/64]:*",
  "src [fd00::2/120]",
  "dst [fd00::4]",
  "src [::1]",
  "dst [::1]:22",
  "src [::]",
  "src 2001:db8::/32",
  "dst [2001:db8::1]:443",
  "src [::ffff:10.1.0.4]",
  "dst [::ffff:10.1.0.0/120]",
  "src [::ffff:127.0.0.1]",
  "dst [::ffff:0.0.0.0/96]",
  "src 0x0a.1.0.1",
  "src 012.1.0.1",
  "src 10.1.0.0/0x18",
  "src 0",
  "dst 127.1",
  "src [FD00::1]",
  "src [fd00:0:0:0:0:0:0:1]",
  "src [::ffff:a01:4]",
  "src [::ffff:10.1.0.4]:6100",
  "src 10.1.0.4:6100",
  "dst 10.1.0.5/32:53",
  "dst 10.1.0.6",
  "src 10.1.0.4",
  "src *",
  "dst *",
  "src *:53",
  "dst *:*",
  "src :80",
  "dst :53",
  "dst :domain",
  "src :ssh",
  // sport/dport: every comparison spelling, port forms, bounds.
  "sport = :http",
  "dport = :www",
  "dst 10.1.0.5:domain",
  "src 10.1.0.1:0x50",
  "sport :53",
  "sport 53",
  "sport = 53",
  "sport == :53",
  "sport eq :53",
  "sport != :53",
  "sport ne :53",
  "sport neq :53",
  "sport < :1024",
  "sport lt :1024",
  "sport <= :1024",
  "sport le 1024",
  "sport leq :1023",
  "sport > :5019",
  "sport gt :5019",
  "sport >= :40000",
  "sport ge :40000",
  "sport geq :60999",
  "dport > :0",
  "dport = :0",
  "dport < :1",
  "sport >= :0",
  "sport <= :65535",
  "dport >= :32768",
  "sport = :0x50",
  "sport = :0120",
  "sport = *",
  "sport = :*",
  "sport != *",
  "dport = *",
  "sport = :65535",
  "dport = :8080",
  "dport = :8081",
  "sport > :1023 and sport < :1025",
  // and/or/not in every spelling; left-to-right grouping; parentheses; implied and.
  "sport >= :5000 and sport <= :5009",
  "sport >= :5000 && sport < :5010",
  "sport >= :5000 & sport < :5010",
  "sport >= :5000 sport < :5010",
  "dport = :53 or dport = :80",
  "dport = :53 || dport = :80",
  "dport = :53 | dport = :80",
  "not sport = :53",
  "! sport = :53",
  "not not sport = :53",
  "not ( sport = :53 or sport = :80 )",
  "not src 10.1.0.0/24",
  "not dst fd00::/64",
  "! dst [::1]",
  "not src 127.0.0.1 and not src [::1]",
  "sport = :53 or sport = :80 and src 10.1.0.0/24",
  "sport = :53 or ( sport = :80 and src 10.1.0.0/24 )",
  "( sport = :53 or sport = :80 ) and src 10.1.0.0/24",
  "src 10.1.0.0/24 and not sport = :53",
  "not sport = :53 and src 10.1.0.0/24",
  "not ( sport = :53 and src 10.1.0.0/24 )",
  "( src 10.1.0.1 or src 10.1.0.2 ) ( dport = :0 or dport >= :1024 )",
  "dst 10.1.0.5:53 or dst [fd00::5]:53 or dst [::ffff:127.0.0.1]:53",
  "not ( dst :53 or dst :80 or dst :443 ) and dport > :0",
  "src fd00::/64 and sport >= :5000 and sport <= :5019",
  "( ( ( sport = :22 ) ) )",
  "not ( not ( sport = :22 or dport = :22 ) )",
  "dport != :53 and dport != :0",
  "dst 10.1.0.0/24 or dst fd00::/64 and sport < :6010",
  "sport = :domain or sport = :http or sport = :https or sport = :ssh",
  "src 0.0.0.0 or src [::]",
  "( src [::ffff:10.1.0.0/120] or src 10.1.0.4 ) and not dport = :53",
  // autobound (not negated), fwmark (every socket here has mark 0).
  "autobound",
  "autobound and dst 10.1.0.0/24",
  "autobound or sport = :22",
  "not sport = :22 and autobound",
  "fwmark 0",
  "fwmark 0/0xff",
  "fwmark 0x1",
  "fwmark = 0x10/0x10",
  "fwmark != 1",
  "not fwmark 0",
];

/** Host words that mean the same to ss's two evaluators for every socket of the scene, negated or not. */
const HOSTS = [
  "10.1.0.1",
  "10.1.0.2:53",
  "10.1.0.0/24",
  "10.1.0.4/31",
  "10.0.0.0/8",
  "10.1.0.0/24:*",
  "127.0.0.1",
  "127.0.0.0/8:22",
  "192.168.7.1",
  "fd00::/64",
  "[fd00::1]",
  "[fd00::3]:6005",
  "[fd00::/126]",
  "[::1]",
  "2001:db8::/32",
  "[::ffff:10.1.0.0/120]",
  "[::ffff:127.0.0.1]",
  "*",
  "*:53",
  ":80",
  ":domain",
];
/** Host words whose raw address words also match sockets of the other family (see the file comment). */
const POSITIVE_ONLY_HOSTS = ["0.0.0.0", "0.0.0.0/0", "[::]", "0.0.0.0:123", "[::]:124"];

const PORTS = [0, 22, 53, 80, 443, 1023, 1024, 5000, 5019, 5039, 6010, 8080, 32768, 40000, 60999, 65535];
const SERVICES: Readonly<Record<number, string>> = { 22: "ssh", 53: "domain", 80: "http", 443: "https" };
const COMPARISONS = [
  ["=", "==", "eq", ""],
  ["!=", "ne", "neq"],
  ["<", "lt"],
  ["<=", "le", "leq"],
  [">", "gt"],
  [">=", "ge", "geq"],
] as const;

/** A generated expression: its text, and whether it is a binary node (which needs parentheses as an operand). */
interface Generated {
  text: string;
  binary: boolean;
}

const leafOf = (text: fc.Arbitrary<string>) => text.map((t): Generated => ({ text: t, binary: false }));

const portWord = fc
  .constantFrom(...PORTS)
  .chain((p) => fc.constantFrom(`:${p}`, `${p}`, ...(SERVICES[p] ? [`:${SERVICES[p]}`] : [])));

const portLeaf = fc
  .tuple(fc.constantFrom("sport", "dport"), fc.integer({ min: 0, max: COMPARISONS.length - 1 }), portWord)
  .chain(([key, op, port]) =>
    fc
      .constantFrom(...COMPARISONS[op]!)
      // `*` (any port) takes only "=" and "!=".
      .chain((cmp) => fc.constantFrom(port, ...(op <= 1 ? ["*"] : [])).map((p) => `${key} ${cmp} ${p}`)),
  );

function hostLeaf(hosts: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom("src", "dst"), fc.constantFrom("", "= "), fc.constantFrom(...hosts))
    .map(([key, eq, host]) => `${key} ${eq}${host}`);
}

const autoboundLeaf = leafOf(fc.constant("autobound"));
const positiveOnlyHosts = leafOf(hostLeaf(POSITIVE_ONLY_HOSTS));
const markLeaf = fc.constantFrom("fwmark 0", "fwmark 1", "fwmark 0/0xf", "fwmark != 0x2/0x3");

/** Leaves that mean the same in either position, weighted towards the conditions that split the scene. */
const commonLeaves = [
  { arbitrary: leafOf(hostLeaf(HOSTS)), weight: 4 },
  { arbitrary: leafOf(portLeaf), weight: 4 },
  { arbitrary: leafOf(markLeaf), weight: 1 },
];

/** Parentheses the grammar does not need, around one operand in five. */
const extraParens = fc.integer({ min: 0, max: 4 }).map((n) => n === 0);

function wrap(g: Generated, force: boolean, extra: boolean): string {
  return force || extra ? `( ${g.text} )` : g.text;
}

/**
 * expressionArbitrary generates ss filter text from the grammar: `positive` expressions may hold
 * `positiveOnly` leaves, `negative` ones (those under an odd number of `not`s) never do.
 */
function expressionArbitrary(positiveOnly: fc.Arbitrary<Generated>): fc.Arbitrary<string> {
  const { positive } = fc.letrec<{ positive: Generated; negative: Generated }>((tie) => {
    const branch = (polarity: "positive" | "negative", leaf: fc.Arbitrary<Generated>) => {
      const same = tie(polarity);
      const flipped = tie(polarity === "positive" ? "negative" : "positive");
      return fc.oneof(
        { depthSize: "small", maxDepth: 5 },
        leaf,
        fc
          .tuple(same, fc.constantFrom("and", "&", "&&", "", "or", "|", "||"), same, extraParens, extraParens)
          .map(
            ([l, op, r, parenLeft, parenRight]): Generated => ({
              // No precedence: the left operand never needs parentheses, the right one does when binary.
              text: `${wrap(l, false, parenLeft)} ${op} ${wrap(r, r.binary, parenRight)}`.replace(
                / {2,}/g,
                " ",
              ),
              binary: true,
            }),
          ),
        fc
          .tuple(fc.constantFrom("not", "!"), flipped, extraParens)
          .map(
            ([not, x, paren]): Generated => ({ text: `${not} ${wrap(x, x.binary, paren)}`, binary: false }),
          ),
      );
    };
    return {
      positive: branch("positive", fc.oneof(...commonLeaves, { arbitrary: positiveOnly, weight: 2 })),
      negative: branch("negative", fc.oneof(...commonLeaves)),
    };
  });
  return positive.map((g) => g.text);
}

/**
 * generatedExpressions returns `count` distinct generated expressions that are not in `exclude`, the
 * same ones for the same seed. Half may hold `autobound`, half the positive-only hosts, none both: the
 * two kinds of condition disagree between ss's evaluators in opposite directions (an accepted TCP
 * socket is "not bound by the program" but outside the ephemeral range), so together they would not
 * reduce to the kernel's meaning.
 */
export function generatedExpressions(count: number, seed: number, exclude: readonly string[] = []): string[] {
  const out = new Set<string>();
  const skip = new Set(exclude);
  const half = Math.ceil(count / 2);
  for (const [i, extra] of [autoboundLeaf, positiveOnlyHosts].entries()) {
    const want = i === 0 ? half : count;
    for (const text of fc.sample(expressionArbitrary(extra), { seed: seed + i, numRuns: count * 4 })) {
      if (out.size === want) break;
      if (!skip.has(text)) out.add(text);
    }
  }
  return [...out];
}

/** sceneExpressions generates expressions of the kind generatedExpressions returns, for property tests. */
export const sceneExpressions: fc.Arbitrary<string> = fc.oneof(
  expressionArbitrary(autoboundLeaf),
  expressionArbitrary(positiveOnlyHosts),
);

/** The seed of the generated part of the corpus (change it only together with a reason). */
export const CORPUS_SEED = 20240611;

/** The whole corpus: the hand-written expressions, then `generated` generated ones. */
export function corpus(generated = 150): string[] {
  return [...HAND_WRITTEN, ...generatedExpressions(generated, CORPUS_SEED, HAND_WRITTEN)];
}
