// The API as the page calls it: the login cookie, its CSRF header on unsafe requests, and
// every failure turned into an ApiError whose message a person can act on.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function csrfToken() {
  const found = document.cookie.split("; ").find((part) => part.startsWith("chronicle_csrf="));
  return found ? decodeURIComponent(found.slice("chronicle_csrf=".length)) : "";
}

export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json, application/problem+json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = csrfToken();
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
    try {
      const problem = await response.json();
      detail = problem.detail || problem.title || detail;
    } catch {
      // not a problem document: keep the status line
    }
    throw new ApiError(response.status, detail);
  }
  return response.status === 204 ? null : response.json();
}

export function signIn(token) {
  return api("/api/login", { method: "POST", body: { token } });
}

export function signInWithCode(code) {
  return api("/api/login/code", { method: "POST", body: { code } });
}

export function signOut() {
  return api("/api/logout", { method: "POST" });
}
