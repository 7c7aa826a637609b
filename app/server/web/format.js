// How values read: times in the viewer's own time zone, ages, money, counts.

const timeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
  timeZoneName: "short",
});
const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });

export function localTime(iso) {
  return iso ? timeFormat.format(new Date(iso)) : "";
}

export function clock(iso) {
  return iso ? clockFormat.format(new Date(iso)) : "";
}

export function age(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

/** How a cost no price is known for is written (UNKNOWN_COST in app/sessions/summary.py). */
export const UNKNOWN_COST = "unknown";

/** `$0.0123`; `≥$0.0123` when some calls have no price; unknown when none has; `$0` with no
 * model call (as format_cost in app/sessions/summary.py). */
export function cost(usd, unpriced = 0, calls = 0) {
  if (!calls) return "$0";
  if (usd === null || usd === undefined) return UNKNOWN_COST;
  return `${unpriced ? "≥" : ""}$${usd.toFixed(4)}`;
}

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

export function stateLabel(state) {
  return state ? state.replaceAll("_", " ") : "starting";
}
