export async function benchNamespaces(): Promise<string[]> {
  return ["namespaces: (to do)"];
}
