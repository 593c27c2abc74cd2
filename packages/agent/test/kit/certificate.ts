/**
 * A throwaway self-signed TLS certificate for 127.0.0.1, made with openssl, as a cluster's API
 * server has one: the stand-in server serves it and the kubeconfig names it as the CA, so the
 * client library verifies TLS exactly as it does against a real cluster.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface Certificate {
  /** PEM certificate; also the CA that verifies it. */
  cert: string;
  /** PEM private key. */
  key: string;
}

export async function makeCertificate(): Promise<Certificate> {
  const dir = await mkdtemp(join(tmpdir(), "sockdiag-agent-cert-"));
  try {
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    await run("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ]);
    return { cert: await readFile(cert, "utf8"), key: await readFile(key, "utf8") };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
