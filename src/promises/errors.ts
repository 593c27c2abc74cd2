/**
 * Every error class sockdiag throws, by name: an error that crossed threads is rebuilt as the class
 * it was, so that `instanceof` and `code` work on the caller's side as they do in a sync call.
 */

import {
  ConntrackQueryError,
  ConntrackUnavailableError,
  EmptySelectionError,
  FlushGuardError,
} from "../conntrack/index.js";
import { FilterResolveError, FilterSyntaxError } from "../filter/index.js";
import { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "../netlink/index.js";
import {
  InvalidNetnsNameError,
  NetnsAsyncCallbackError,
  NetnsError,
  NetnsExistsError,
  NetnsNotFoundError,
  NetnsPoisonedError,
  NetnsRestoreError,
  NotANetnsError,
  PinDirectoryNotFoundError,
} from "../netns/index.js";
import { AbortError, DestroyError, QueryError, UnsupportedProtocolError } from "../sockets/index.js";
import { SysError } from "../sys/errors.js";
import { AddressError } from "../terminator/index.js";

// biome-ignore lint/suspicious/noExplicitAny: constructors of every signature
type ErrorClass = abstract new (...args: any[]) => Error;

const classes: ErrorClass[] = [
  AbortError,
  AddressError,
  ConntrackQueryError,
  ConntrackUnavailableError,
  DecodeError,
  DestroyError,
  EmptySelectionError,
  FilterResolveError,
  FilterSyntaxError,
  FlushGuardError,
  InvalidNetnsNameError,
  NetlinkError,
  NetlinkProtocolError,
  NetlinkTimeoutError,
  NetnsAsyncCallbackError,
  NetnsError,
  NetnsExistsError,
  NetnsNotFoundError,
  NetnsPoisonedError,
  NetnsRestoreError,
  NotANetnsError,
  PinDirectoryNotFoundError,
  QueryError,
  SysError,
  UnsupportedProtocolError,
  Error,
  TypeError,
  RangeError,
];

export const ERROR_CLASSES: ReadonlyMap<string, ErrorClass> = new Map(classes.map((c) => [c.name, c]));
