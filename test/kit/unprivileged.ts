/**
 * Running a program without privilege, from any checkout: as root with every capability dropped
 * (setpriv clears the bounding, inheritable and ambient sets, so the exec'd program has none),
 * instead of as another user — a user such as nobody cannot read a checkout in a mode-0700
 * directory like /root, and its node would fail to start. Without capabilities, sock_diag dumps
 * still work while destroys (CAP_NET_ADMIN) and setns (CAP_SYS_ADMIN) are refused, which is what
 * the unprivileged tests check.
 */

/** The command words that run the words after them without any capability. */
export const WITHOUT_CAPABILITIES: readonly string[] = [
  "setpriv",
  "--inh-caps=-all",
  "--ambient-caps=-all",
  "--bounding-set=-all",
  "--",
];

/**
 * Why a child's stderr says it never ran the program it was given (setpriv failed, node could not
 * read or find the script), or undefined when it did start. Tests check this first, so that a
 * broken start reads as such instead of as "Unexpected end of JSON input".
 */
export function startFailure(stderr: string): string | undefined {
  const line = stderr
    .split("\n")
    .find((l) => /^setpriv: |Error: Cannot find module|EACCES: permission denied|^node: /.test(l));
  return line === undefined ? undefined : line.trim();
}
