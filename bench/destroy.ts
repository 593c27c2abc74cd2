export async function benchDestroy(): Promise<string[]> {
  return ["destroy: (to do)"];
}
