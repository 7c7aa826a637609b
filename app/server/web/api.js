// The API as the page calls it: the login cookie, its CSRF header on unsafe requests, and
// every failure turned into an ApiError whose message a person can act on.

export class ApiError extends Error {
  constructor(status, detail, errors = null) {
    super(detail);
    this.status = status;
    this.errors = errors; // a problem's list of what is wrong (e.g. a suite's lines), when it has one
  }
}

// The CSRF token of this page's own login, kept in this origin's storage (never read from a
// cookie: cookies are the host's, whatever the port, so a page on another port of the host
// can set them; its storage it cannot). Sent with every request: the server refuses a login
// cookie that does not go with it, so a cookie set by someone else signs this page in nowhere.
const CSRF_KEY = "chronicle_csrf";

function csrfToken() {
  try {
    return localStorage.getItem(CSRF_KEY) || "";
  } catch {
    return "";
  }
}

function keepCsrfToken(login) {
  try {
    localStorage.setItem(CSRF_KEY, login.csrf_token);
  } catch {
    // no storage (a private window that refuses it): unsafe requests will be refused
  }
  return login;
}

export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json, application/problem+json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  headers["X-CSRF-Token"] = csrfToken();
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (error) {
    throw new ApiError(0, `The server could not be reached (${error.message}). Check that chronicle serve is running, then try again.`);
  }
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    let errors = null;
    try {
      const problem = await response.json();
      detail = problem.detail || problem.title || detail;
      errors = Array.isArray(problem.errors) ? problem.errors : null;
    } catch {
      // not a problem document: keep the status line
    }
    throw new ApiError(response.status, detail, errors);
  }
  return response.status === 204 ? null : response.json();
}

export async function signIn(token) {
  return keepCsrfToken(await api("/api/login", { method: "POST", body: { token } }));
}

export async function signInWithCode(code) {
  return keepCsrfToken(await api("/api/login/code", { method: "POST", body: { code } }));
}

// Whom a sign-in link's code signs in as ({user, is_admin, expires_at}); the code stays unused.
export async function peekCode(code) {
  return api("/api/login/code/peek", { method: "POST", body: { code } });
}

export async function signOut() {
  try {
    return await api("/api/logout", { method: "POST" });
  } finally {
    try {
      localStorage.removeItem(CSRF_KEY);
    } catch {
      // nothing kept
    }
  }
}
