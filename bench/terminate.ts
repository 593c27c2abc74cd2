export async function benchTerminate(): Promise<string[]> {
  return ["terminate: (to do)"];
}
