/**
 * koffi, its native module loaded straight from koffi's own platform package where the choice is
 * plain: Linux on x64 or arm64 with glibc. koffi's index makes that choice at every start-up by
 * reading the ELF header of the node binary, which costs a CLI run ~10 ms and ~90 page faults.
 * Anywhere else (musl, other architectures, a layout that moved), koffi's own loader decides.
 * CommonJS, so that `require` resolves from here both in the library and in the CLI's bundle.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type * as Koffi from "koffi";

type KoffiModule = typeof Koffi;

function loadNative(): KoffiModule | undefined {
  const arch = process.arch;
  if (process.platform !== "linux" || (arch !== "x64" && arch !== "arm64")) return undefined;
  // The process's own libc: musl builds of node map ld-musl, glibc ones libc.so.6.
  if (!readFileSync("/proc/self/maps", "latin1").includes("/libc.so.6")) return undefined;
  const index = require.resolve("koffi");
  const native = createRequire(index)(`@koromix/koffi-linux-${arch}/linux_${arch}/koffi.node`) as KoffiModule;
  // koffi's loader refuses a native module of another version than its own: so does this one.
  const { version } = JSON.parse(readFileSync(join(dirname(index), "package.json"), "utf8")) as {
    version: string;
  };
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
