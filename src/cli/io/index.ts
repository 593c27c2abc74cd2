/**
 * The command line's edges: option tables (parsing and `--help`), stdout, errors turned into
 * messages and exit codes, and the version.
 */
export {
  type CommandSpec,
  HELP,
  type OptionSpec,
  type Parsed,
  type ParsedValues,
  parseCommand,
  renderHelp,
} from "./options.js";
export { OutputError, writeOut } from "./stdout.js";
export { EXIT_FAILED, EXIT_OK, EXIT_USAGE, reportError, UsageError } from "./usage.js";
export { VERSION } from "./version.js";
