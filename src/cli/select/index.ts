/**
 * Which sockets and namespaces a command visits: ss's selection flags, socket tables and families,
 * filter words, the namespace flags, and the cgroup paths --cgroup and -e show.
 */
export { type CgroupPaths, cgroup2Mount } from "./cgroup.js";
export {
  cgroupsFor,
  type Display,
  NETNS_DIR_OPTION,
  NETNS_OPTIONS,
  NO_DISCOVER_OPTION,
  namespaceFromArgs,
  type Selection,
  selectionFromArgs,
  selectOptions,
} from "./select.js";
export { selectTables } from "./tables.js";
