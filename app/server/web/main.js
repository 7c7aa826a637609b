// The page's shell: who is signed in, which view the address names (#/, #/new,
// #/sessions/ID), and one place where errors are shown as messages.

import { api, ApiError, peekCode, signIn, signInWithCode, signOut } from "./api.js";
import { el, clear } from "./dom.js";
import { clock } from "./format.js";
import { sessionsView, newSessionView } from "./sessions.js";
import { notFoundView, sessionView } from "./session.js";
import { evaluationView, comparisonView } from "./evaluation.js";
import { trialPairView } from "./evaluation_pair.js";
import { replayFormView, replayCompareView } from "./replay.js";
import { auditView } from "./audit.js";
import { usageView } from "./usage.js";
import { workspaceView } from "./workspace.js";
import { playgroundView } from "./playground.js";
import { reviewView } from "./review.js";

const main = document.getElementById("main");
const notice = document.getElementById("notice");
const who = document.getElementById("who");
const logout = document.getElementById("logout");
const auditLink = document.getElementById("audit-link");
const mainNav = document.getElementById("main-nav"); // hidden until someone is signed in
let leave = () => {};
let me = null;

export function showError(error) {
  if (error instanceof ApiError && error.status === 401) {
    me = null;
    route();
    return;
  }
  notice.textContent = error instanceof Error ? error.message : String(error);
  notice.hidden = false;
}

export function clearError() {
  notice.hidden = true;
  notice.textContent = "";
}

function signInView(message) {
  const token = el("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true,
    "aria-describedby": "token-help" });
  const form = el("form", { class: "card narrow", "aria-labelledby": "signin-title" },
    el("h1", { id: "signin-title" }, "Sign in to Chronicle"),
    el("p", {}, "Chronicle records everything a coding agent does: each model call, command and file edit, in order, as a log nobody can rewrite. Sign in to watch and steer your agents' sessions."),
    message ? el("p", { class: "error", role: "alert" }, message) : null,
    el("label", { for: "token" }, "API token"),
    token,
    el("p", { id: "token-help", class: "muted" }, "A token from ", el("code", {}, "chronicle tokens create NAME"), ", or open a sign-in link from ", el("code", {}, "chronicle login-link NAME"), " (", el("code", {}, "./dev up"), " prints one)."),
    el("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    try {
      await signIn(token.value.trim());
      await route();
    } catch (error) {
      clear(main).append(signInView(error.message));
    }
  });
  clear(main).append(form);
  token.focus();
}

async function whoAmI() {
  try {
    me = await api("/api/me");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null;
    throw error;
  }
  return me;
}

let routes = 0; // a route started while another waits on /api/me replaces it

/** A session named by a prefix of its id (the 8 characters the page shows): the address is
 * replaced by the whole id, or the page says no session or which several it begins. */
async function resolvePrefix(prefix, rest) {
  let found;
  try {
    found = await api(`/api/sessions?id_prefix=${encodeURIComponent(prefix)}&limit=5`);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 422 || error.status === 400)) {
      notFoundView(main, error.message);
      return;
    }
    throw error;
  }
  const sessions = found.sessions;
  if (sessions.length === 1) {
    location.replace(`#/sessions/${sessions[0].id}${rest || ""}`);
    return;
  }
  if (!sessions.length) {
    notFoundView(main, `No session of yours has an id beginning with ${prefix}.`);
    return;
  }
  notFoundView(main, `${prefix} begins the ids of several sessions: `);
  main.querySelector("section p").append(...sessions.flatMap((s, i) => [i ? ", " : "",
    el("a", { href: `#/sessions/${s.id}${rest || ""}` }, s.id), ` (${s.title || "untitled"})`]));
}

const SESSION_ROUTE = /^\/sessions\/([0-9a-fA-F-]{4,36})(\/events\/(\d+))?$/;
const WHOLE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function route() {
  const path = location.hash.replace(/^#/, "") || "/";
  const session = path.match(SESSION_ROUTE);
  // another event of the session on the page: opened in place, the page kept
  if (session && me && leave.sessionId === session[1] && leave.navigate) {
    leave.navigate(session[3] ? Number(session[3]) : null);
    return;
  }
  leave();
  leave = () => {};
  clearError();
  const mine = ++routes;
  try {
    const known = me || (await whoAmI());
    if (mine !== routes) return;
    if (!known) {
      who.textContent = "";
      logout.hidden = true;
      mainNav.hidden = true;
      auditLink.hidden = true;
      signInView();
      return;
    }
  } catch (error) {
    if (mine === routes) clear(main).append(el("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  who.textContent = `${me.user}${me.is_admin ? " (admin)" : ""}`;
  logout.hidden = false;
  mainNav.hidden = false;
  auditLink.hidden = !me.is_admin;
  const context = { main, me, showError, clearError, go: (to) => { location.hash = to; } };
  const comparison = path.match(/^\/evaluations\/([^/]+)\/vs\/([^/]+)$/);
  const pair = path.match(/^\/evaluations\/([^/]+)\/vs\/([^/]+)\/tasks\/([^/]+)$/);
  const evaluation = path.match(/^\/evaluations(?:\/(.+))?$/);
  const replay = path.match(/^\/replays\/([0-9a-f-]{36})(?:\/([0-9a-f-]{36}))?$/);
  const workspace = path.match(/^\/sessions\/([0-9a-f-]{36})\/workspace$/);
  const playground = path.match(/^\/sessions\/([0-9a-f-]{36})\/calls\/(\d+)\/playground$/);
  if (workspace) leave = workspaceView(context, workspace[1]);
  else if (playground) leave = playgroundView(context, playground[1], Number(playground[2]));
  else if (session && !WHOLE_ID.test(session[1])) await resolvePrefix(session[1], session[2]);
  else if (session) leave = sessionView(context, session[1], session[3] ? Number(session[3]) : null);
  else if (replay && replay[2]) leave = replayCompareView(context, replay[1], replay[2]);
  else if (replay) leave = replayFormView(context, replay[1]);
  else if (pair) leave = trialPairView(context, ...pair.slice(1).map(decodeURIComponent));
  else if (comparison) leave = comparisonView(context, decodeURIComponent(comparison[1]), decodeURIComponent(comparison[2]));
  else if (evaluation) leave = evaluationView(context, evaluation[1] ? decodeURIComponent(evaluation[1]) : "");
  else if (path === "/new") leave = newSessionView(context);
  else if (path === "/audit") leave = auditView(context);
  else if (path === "/usage" || path.startsWith("/usage?")) leave = usageView(context, new URLSearchParams(path.split("?")[1] || ""));
  else if (/^\/review(\?|$)/.test(path)) leave = reviewView(context, new URLSearchParams(path.split("?")[1] || ""));
  else leave = sessionsView(context);
  main.focus({ preventScroll: true });
}

// A sign-in link is used only when the person says so, and only once the page has named the
// user it signs in as: another site can open /login#code=<its own account's code> in the
// visitor's browser (a link, a pop-up it closes at once), and a page that posted the code by
// itself, or asked without saying whose account it is, would sign the visitor in to the
// attacker's account (login CSRF by navigation). The peek leaves the code unused.
async function confirmSignInLink(code) {
  let holder;
  try {
    holder = await peekCode(code);
  } catch (error) {
    signInView(`That sign-in link did not work: ${error.message}`);
    return;
  }
  let current = null;
  try {
    current = await whoAmI();
  } catch {
    current = null;
  }
  const name = `${holder.user}${holder.is_admin ? " (admin)" : ""}`;
  const use = el("button", { type: "submit" }, `Sign in as ${holder.user}`);
  const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
  let already = null;
  if (current && current.user === holder.user) {
    already = el("p", { class: "muted" }, `You are signed in as ${current.user} already; the link starts another login of the same account.`);
  } else if (current) {
    already = el("p", { class: "error", role: "alert" }, `You are signed in as ${current.user}; this link signs you in as ${holder.user} instead.`);
  }
  const form = el("form", { class: "card narrow", "aria-labelledby": "link-title" },
    el("h1", { id: "link-title" }, `Sign in as ${holder.user}?`),
    el("p", {}, "This link signs this browser in to Chronicle as ", el("strong", {}, name),
      ` (it works once, until ${clock(holder.expires_at)}).`),
    el("p", {}, `If ${holder.user} is not your account, press Cancel: a link someone else sent you signs you in to their account, so that what you type lands there. Links come from `,
      el("code", {}, "chronicle login-link NAME"), "."),
    already,
    el("div", { class: "actions" }, use, cancel));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    use.disabled = true;
    try {
      await signInWithCode(code);
    } catch (error) {
      signInView(`That sign-in link did not work: ${error.message}`);
      return;
    }
    me = null;
    await route();
  });
  cancel.addEventListener("click", () => { route(); });
  clear(main).append(form);
  use.focus();
}

async function start() {
  // A sign-in link, /login#code=...: the one-time code is in the fragment (never sent to the
  // server in a URL), leaves the address bar at once, and is posted by this page once the
  // person confirms it.
  if (location.pathname === "/login") {
    const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
    const code = fragment.get("code");
    history.replaceState(null, "", "/");
    if (code) {
      await confirmSignInLink(code);
      return;
    }
  }
  await route();
}

logout.addEventListener("click", async () => {
  try {
    await signOut();
  } catch (error) {
    showError(error);
  }
  me = null;
  location.hash = "/";
  route();
});
window.addEventListener("hashchange", route);
window.addEventListener("unhandledrejection", (event) => showError(event.reason));
start();
