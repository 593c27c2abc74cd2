/**
 * koffi, its native module loaded straight from koffi's own platform package where the choice is
 * plain: Linux on x64 or arm64 without musl. koffi's index makes that choice at every start-up by
 * reading the ELF header of the node binary, which costs a CLI run ~10 ms and ~90 page faults.
 * Anywhere else (musl, other architectures, a layout that moved), koffi's own loader decides.
 * CommonJS, so that `require` resolves from here both in the library and in the CLI's bundle.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type * as Koffi from "koffi";

type KoffiModule = typeof Koffi;

const MUSL_LOADERS = { x64: "/lib/ld-musl-x86_64.so.1", arm64: "/lib/ld-musl-aarch64.so.1" };

/**
 * The first of `dirs` holding `relative`, as require() would find a package there. Looked up by
 * hand: require.resolve's first use costs a CLI ~5 ms of package.json and "exports" machinery.
 */
function firstHolding(dirs: readonly string[] | null, relative: string): string | undefined {
  for (const dir of dirs ?? []) {
    const path = join(dir, relative);
    if (existsSync(path)) return path;
  }
  return undefined;
}

function loadNative(): KoffiModule | undefined {
  const arch = process.arch;
  if (process.platform !== "linux" || (arch !== "x64" && arch !== "arm64")) return undefined;
  // A system with musl's loader may run a musl build of node: koffi's loader tells them apart.
  if (existsSync(MUSL_LOADERS[arch])) return undefined;
  const koffiPackage = firstHolding(require.resolve.paths("koffi"), "koffi/package.json");
  if (!koffiPackage) return undefined;
  // Where koffi's own require would find its platform package: its node_modules, then upwards.
  const platformPackage = `@koromix/koffi-linux-${arch}`;
  const fromKoffi = createRequire(koffiPackage).resolve.paths(platformPackage);
  const path = firstHolding(fromKoffi, `${platformPackage}/linux_${arch}/koffi.node`);
  if (!path) return undefined;
  const native = require(path) as KoffiModule;
  // koffi's loader refuses a native module of another version than its own: so does this one.
  const { version } = JSON.parse(readFileSync(koffiPackage, "utf8")) as { version: string };
  return typeof native.load === "function" && native.version === version ? native : undefined;
}

function load(): KoffiModule {
  try {
    const native = loadNative();
    if (native) return native;
  } catch {
    // Not where koffi 3 keeps it: koffi's loader knows.
  }
  return require("koffi") as KoffiModule;
}

export = load();
