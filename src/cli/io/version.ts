/** The package version `sockdiag --version` prints; a test keeps it equal to package.json's. */
export const VERSION = "0.1.0";
