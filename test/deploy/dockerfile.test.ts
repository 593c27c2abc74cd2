/**
 * scripts/dockerfile.ts, which `npm run replay:dockerfile` reads deploy/Dockerfile with: what it
 * makes of each instruction, what it refuses, the .dockerignore patterns; and deploy/Dockerfile as
 * it reads it (the replay itself runs from .ci/run).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { DockerfileError, dockerignore, parseDockerfile } from "../../scripts/dockerfile.js";

const root = (path: string) => new URL(`../../../${path}`, import.meta.url);

describe("parseDockerfile", () => {
  test("stages, steps with their lines, comments dropped, continued lines joined", () => {
    const stages = parseDockerfile(
      [
        "# a comment",
        "FROM node:24-bookworm-slim AS build",
        "WORKDIR /src",
        "COPY . .",
        "RUN npm ci \\",
        "    # a comment inside the continuation",
        "    --no-audit",
        "FROM node:24-bookworm-slim",
        'ENV A=1 B="two words"',
        "ENV C three",
        "COPY --from=build /src/a /src/b ./dir/",
        'ENTRYPOINT ["node", "/app/x.js"]',
      ].join("\n"),
    );
    assert.deepEqual(stages, [
      {
        image: "node:24-bookworm-slim",
        name: "build",
        steps: [
          { line: 3, kind: "workdir", path: "/src" },
          { line: 4, kind: "copy", from: undefined, sources: ["."], dest: "." },
          { line: 5, kind: "run", command: "npm ci --no-audit" },
        ],
      },
      {
        image: "node:24-bookworm-slim",
        name: undefined,
        steps: [
          { line: 9, kind: "env", vars: { A: "1", B: "two words" } },
          { line: 10, kind: "env", vars: { C: "three" } },
          { line: 11, kind: "copy", from: "build", sources: ["/src/a", "/src/b"], dest: "./dir/" },
          { line: 12, kind: "entrypoint", argv: ["node", "/app/x.js"] },
        ],
      },
    ]);
  });

  test("what the replay cannot follow is an error naming the line", () => {
    const refused: [string, RegExp][] = [
      ["FROM a\nUSER nobody", /^line 2: USER nobody: an instruction the replay does not know$/],
      ["FROM a\nCOPY --chown=1 a b", /^line 2: .*no COPY flag but --from \(--chown=1\)$/],
      ['FROM a\nRUN ["npm", "ci"]', /^line 2: .*shell-form RUN only$/],
      ["FROM a\nENTRYPOINT node x.js", /^line 2: .*exec-form ENTRYPOINT only/],
      ["FROM a\nENTRYPOINT []", /^line 2: .*non-empty JSON array/],
      ["FROM a\nCOPY a", /^line 2: .*COPY SOURCE\.\.\. DEST$/],
      ["WORKDIR /x", /^line 1: .*before the first FROM$/],
      ["FROM a\nRUN x \\", /^line 2: continued past the end/],
      ["# nothing", /^no FROM$/],
    ];
    for (const [text, message] of refused)
      assert.throws(
        () => parseDockerfile(text),
        (err: Error) => err instanceof DockerfileError && message.test(err.message),
        text,
      );
  });
});

describe("dockerignore", () => {
  const ignored = dockerignore("# comment\n.git\n**/node_modules\ndeploy/secret/\n");

  test("a path leaves out itself and what is under it; **/NAME leaves out NAME at any depth", () => {
    for (const path of [
      ".git",
      ".git/HEAD",
      "node_modules",
      "packages/agent/node_modules/x",
      "deploy/secret/k",
    ])
      assert.equal(ignored(path), true, path);
    for (const path of ["", "src/index.ts", ".gitignore", "deploy/secrets", "packages/agent/package.json"])
      assert.equal(ignored(path), false, path);
  });

  test("other patterns are refused, never guessed", () => {
    for (const pattern of ["*.log", "!keep", "src/**/x", "a?b"])
      assert.throws(() => dockerignore(pattern), DockerfileError, pattern);
  });
});

describe("deploy/Dockerfile", () => {
  const stages = parseDockerfile(readFileSync(root("deploy/Dockerfile"), "utf8"));
  const agent = JSON.parse(readFileSync(root("packages/agent/package.json"), "utf8")) as {
    bin: Record<string, string>;
  };

  test("built and run on a supported Node.js line that is not past its end of life (22 or 24)", () => {
    for (const stage of stages)
      assert.match(stage.image, /^node:(22|24)-bookworm-slim(@sha256:[0-9a-f]{64})?$/);
  });

  test("the build stage installs with optional dependencies (koffi's binary) and builds", () => {
    const runs = stages[0]!.steps.flatMap((s) => (s.kind === "run" ? [s.command] : []));
    assert.ok(runs.some((r) => /^npm ci\b/.test(r)));
    for (const r of runs) assert.doesNotMatch(r, /--omit=optional|--no-optional|--omit optional/);
  });

  test("the final stage runs nothing at build time and starts the agent's bin", () => {
    const final = stages.at(-1)!;
    assert.equal(final.steps.filter((s) => s.kind === "run").length, 0);
    const entrypoint = final.steps.find((s) => s.kind === "entrypoint");
    const bin = agent.bin["sockdiag-agent"]!.replace(/^\.\//, "");
    assert.deepEqual(entrypoint?.kind === "entrypoint" && entrypoint.argv, [
      "node",
      `/app/packages/agent/${bin}`,
    ]);
  });
});
