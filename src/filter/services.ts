/**
 * Service names for ports (`:domain`, `:https`), resolved without the network: from /etc/services as
 * getservbyname(3) reads it with the "files" backend, or from a small built-in table when the file is
 * absent. ss looks a name up for TCP and for UDP and refuses a name the two map to different ports.
 */
import { readFileSync } from "node:fs";

/** The transport protocols ss resolves service names for. */
export type ServiceProtocol = "tcp" | "udp";

/** ServiceTable maps a service name or alias to its port, per protocol. */
export interface ServiceTable {
  /** The port of `name` for `protocol`, or undefined when the table does not know it. */
  lookup(name: string, protocol: ServiceProtocol): number | undefined;
}

/** Well-known services used when /etc/services cannot be read (names as in Debian's netbase). */
const BUILTIN = `
ftp-data 20/tcp
ftp 21/tcp
ssh 22/tcp
telnet 23/tcp
smtp 25/tcp mail
domain 53/tcp
domain 53/udp
bootps 67/udp
bootpc 68/udp
tftp 69/udp
http 80/tcp www
kerberos 88/tcp
kerberos 88/udp
pop3 110/tcp
sunrpc 111/tcp portmapper
sunrpc 111/udp portmapper
ntp 123/udp
imap2 143/tcp imap
snmp 161/udp
ldap 389/tcp
https 443/tcp
https 443/udp
syslog 514/udp
submission 587/tcp
ldaps 636/tcp
imaps 993/tcp
pop3s 995/tcp
mysql 3306/tcp
postgresql 5432/tcp
`;

/**
 * parseServices reads services(5) text: "name port/protocol [aliases...] [# comment]" per line.
 * The first entry for a name and protocol wins, as getservbyname's linear scan does.
 */
export function parseServices(text: string): ServiceTable {
  const maps: Record<ServiceProtocol, Map<string, number>> = { tcp: new Map(), udp: new Map() };
  for (const rawLine of text.split("\n")) {
    const fields = rawLine.replace(/#.*/, "").trim().split(/\s+/);
    const [name, portProto, ...aliases] = fields;
    const m = /^(\d+)\/(tcp|udp)$/.exec(portProto ?? "");
    if (!name || !m) continue;
    const port = Number(m[1]);
    if (port > 65535) continue;
    const map = maps[m[2] as ServiceProtocol];
    for (const n of [name, ...aliases]) if (!map.has(n)) map.set(n, port);
  }
  return { lookup: (name, protocol) => maps[protocol].get(name) };
}

let builtinTable: ServiceTable | undefined;

/** The built-in table, for machines without /etc/services (parsed on first lookup, not at load). */
export const builtinServices: ServiceTable = {
  lookup: (name, protocol) => {
    builtinTable ??= parseServices(BUILTIN);
    return builtinTable.lookup(name, protocol);
  },
};

/**
 * loadServices reads a services(5) file; when it cannot be read, returns the built-in table.
 * (Read once per call: callers that parse many filters should keep the table.)
 */
export function loadServices(path = "/etc/services"): ServiceTable {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return builtinServices;
  }
  return parseServices(text);
}

let systemTable: ServiceTable | undefined;

/** /etc/services (or the built-in table), read at its first lookup and kept. */
const systemTableOnFirstLookup: ServiceTable = {
  lookup: (name, protocol) => {
    systemTable ??= loadServices();
    return systemTable.lookup(name, protocol);
  },
};

/**
 * systemServices is /etc/services (or the built-in table), read at the first lookup of a name and
 * kept: parsing a filter without one (a port number, an address) never reads the file, which
 * costs a CLI run ~2 ms of its start (read and parsed, ~600 lines).
 */
export function systemServices(): ServiceTable {
  return systemTableOnFirstLookup;
}
