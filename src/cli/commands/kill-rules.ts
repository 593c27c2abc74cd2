/**
 * What `kill` and `ls -K` share before anything is destroyed, in a module of its own: `ls` loads
 * kill's code only when -K asks for it.
 */
import type { Protocol } from "../../diag/socket.js";

/** The flag that lets kill run without a FILTER: unmistakable, unlike -a (every state). */
export const DESTROY_ALL = "destroy-all";

/** What kill selects without a protocol flag (also `ls -K`). */
export const KILL_PROTOCOLS: readonly Protocol[] = ["tcp", "udp"];
