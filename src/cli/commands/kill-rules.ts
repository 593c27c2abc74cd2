/**
 * What `kill` and `ls -K` share before anything is destroyed, in a module of its own: `ls` loads
 * kill's code only when -K asks for it.
 */
/** The flag that lets kill run without a FILTER: unmistakable, unlike -a (every state). */
export const DESTROY_ALL = "destroy-all";

/** What kill selects without a table or family flag (also `ls -K`), as ss -A names. */
export const KILL_TABLES: readonly string[] = ["tcp", "udp"];
