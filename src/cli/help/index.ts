/** What the command tables tell besides parsing: the man page and shell completion. */
export {
  type Completion,
  type CompletionSources,
  complete,
  completionScript,
  DEFAULT_SOURCES,
  formatCompletion,
  SHELLS,
  type Shell,
} from "./completion.js";
export { commandSpecs, renderManPage } from "./manpage.js";
