/**
 * The filter layer: ss's filter language as text or objects -> a typed tree -> the kernel's
 * INET_DIAG_REQ_BYTECODE program and a JS predicate with the same meaning.
 */
export type {
  AndNode,
  AutoboundCond,
  CgroupCond,
  DevCond,
  FilterLeaf,
  FilterNode,
  HostCond,
  HostPrefix,
  MarkCond,
  NotNode,
  OrNode,
  PortCond,
  PortOp,
  Side,
} from "./ast.js";
export {
  checkFilterTree,
  type FilterInput,
  MAX_FILTER_DEPTH,
  type PreparedFilter,
  prepareFilter,
  selectsEverything,
} from "./check.js";
export {
  type BytecodeOptions,
  type CompiledFilter,
  compileBytecode,
  compileIn,
  compilePredicate,
  type OmittableCondition,
  type SocketPredicate,
} from "./compile.js";
export { type FilterEnv, readEphemeralPorts, resolveCgroupPath } from "./env.js";
export { FilterResolveError, FilterSyntaxError } from "./errors.js";
export { formatFilter } from "./format.js";
export { type ParseOptions, parseFilter } from "./parser.js";
export {
  builtinServices,
  loadServices,
  parseServices,
  type ServiceTable,
  systemServices,
} from "./services.js";
export { filterFromObject, type PortSpec, type PortValue, type StructuredFilter } from "./structured.js";
