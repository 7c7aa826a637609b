// A session's workspace (#/sessions/ID/workspace, linked from the session page): the files at
// the end of its last run as a tree, each marked added, modified, deleted or unchanged, and the
// picked file's diff against the recorded start (GET /api/sessions/ID/workspace). Noise
// (__pycache__, *.pyc, ...) is never dropped silently: what the recorded diff left out is
// counted, and noise the log holds is folded behind a checkbox with its count.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { diffView } from "./timeline.js";

const MARKS = { added: "A", modified: "M", deleted: "D", unchanged: "" };

function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}

/** "12 files left out: __pycache__, *.pyc" (null when none). */
function leftOutLine(groups, verb) {
  const files = groups.reduce((sum, group) => sum + group.files, 0);
  if (!files) return null;
  return `${plural(files, "file")} ${verb}: ${groups.map((group) => group.pattern).join(", ")}`;
}

function startLine(w) {
  if (w.vcs === null) return "This session recorded no workspace (it predates workspace recording, or was imported without one).";
  if (w.vcs === "unavailable") return `The host could not see this session's workspace, so nothing was recorded${w.message ? `: ${w.message}` : "."}`;
  if (w.vcs === "git") {
    return `Started from git commit ${w.commit ? w.commit.slice(0, 12) : "(none yet)"}${w.branch ? ` on ${w.branch}` : ""}, with its uncommitted changes. `
      + "Only files that differed from that commit are in the log: the rest of the repository is as the commit has it.";
  }
  return "Started from a plain directory; every file of the start is in the log.";
}

function endLine(w) {
  if (w.change_seq === null) return "No run has ended yet, so no change is recorded: the files are the start's.";
  return `The change recorded when the last run ended (${w.reason || "ended"}, event #${w.change_seq}), against the start (event #${w.start_seq}).`;
}

/** Directories first, then files, each level sorted; a file is {entry}, a directory {children}. */
function treeOf(files) {
  const root = new Map();
  for (const entry of files) {
    const parts = entry.path.split("/");
    let level = root;
    for (const part of parts.slice(0, -1)) {
      if (!level.has(`${part}/`)) level.set(`${part}/`, new Map());
      level = level.get(`${part}/`);
    }
    level.set(parts[parts.length - 1], entry);
  }
  return root;
}

function detail(entry) {
  if (!entry) return el("p", { class: "muted" }, "Pick a file to see its change.");
  const status = el("span", { class: `file-status status-${entry.status}` }, entry.status);
  const what = [];
  if (entry.noise) what.push(el("p", { class: "muted small" }, `Noise (${entry.noise}): folded unless asked for.`));
  if (entry.skipped) what.push(el("p", { class: "muted" }, `Its content was not recorded: ${entry.skipped}.`));
  if (entry.status === "unchanged") {
    what.push(el("p", { class: "muted" }, `Unchanged since the start${entry.size !== null ? ` (${plural(entry.size, "byte")})` : ""}.`));
  } else if (entry.binary && !entry.diff.includes("\n@@")) {
    what.push(el("p", { class: "muted" }, `A binary file, ${entry.status}${entry.size !== null ? ` (${plural(entry.size, "byte")} at the start)` : ""}: its patch is git's binary form.`));
  }
  if (entry.diff) what.push(diffView(entry.diff));
  return el("article", { class: "file-detail", "aria-label": `Change of ${entry.path}` },
    el("h2", {}, el("code", {}, entry.path), " ", status), what);
}

export function workspaceView({ main, showError, clearError }, id) {
  const body = el("div", { class: "workspace" }, el("p", { class: "muted", role: "status" }, "Loading the workspace…"));
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/" }, "Sessions"), " / ",
      el("a", { href: `#/sessions/${id}` }, id.slice(0, 8)), " / ", el("span", {}, "Workspace")),
    el("h1", {}, "Workspace"), body);
  let closed = false;
  api(`/api/sessions/${id}/workspace`).then((w) => {
    if (closed) return;
    clearError();
    const pane = el("div", { class: "file-pane", "aria-live": "polite" });
    const treeBox = el("nav", { class: "file-tree", "aria-label": "Files at the end" });
    const folded = w.folded.reduce((sum, group) => sum + group.files, 0);
    const showNoise = el("input", { type: "checkbox", id: "show-noise" });
    let picked = null;
    const pick = (entry) => {
      picked = entry;
      for (const node of treeBox.querySelectorAll("button.file")) {
        if (node.dataset.path === entry.path) node.setAttribute("aria-current", "true");
        else node.removeAttribute("aria-current");
      }
      clear(pane).append(detail(entry));
    };
    const draw = () => {
      const shown = w.files.filter((entry) => showNoise.checked || !entry.noise);
      const level = (map) => el("ul", { class: "tree" }, [...map.entries()]
        .sort(([a], [b]) => (a.endsWith("/") === b.endsWith("/") ? a.localeCompare(b) : a.endsWith("/") ? -1 : 1))
        .map(([name, value]) => (value instanceof Map
          ? el("li", {}, el("details", { open: true }, el("summary", { class: "dir" }, name), level(value)))
          : el("li", {}, el("button", { type: "button", class: `file status-${value.status}${value.noise ? " noise" : ""}`, "data-path": value.path,
            "aria-current": picked && picked.path === value.path ? "true" : null, onclick: () => pick(value) },
          el("span", { class: "mark", "aria-hidden": "true" }, MARKS[value.status]), name,
          value.status === "unchanged" ? null : el("span", { class: "visually-hidden" }, ` (${value.status})`))))));
      clear(treeBox).append(shown.length ? level(treeOf(shown)) : el("p", { class: "muted" }, "No file to show."));
    };
    showNoise.addEventListener("change", draw);
    const counts = [
      w.added ? plural(w.added, "added", "added") : null,
      w.modified ? plural(w.modified, "modified", "modified") : null,
      w.deleted ? plural(w.deleted, "deleted", "deleted") : null,
    ].filter(Boolean);
    const leftOut = leftOutLine(w.left_out, "left out of the recorded diff as noise");
    clear(body).append(
      el("section", { class: "summary", "aria-label": "What was recorded" },
        el("p", {}, startLine(w)),
        el("p", {}, endLine(w)),
        el("p", { class: "workspace-counts" }, el("strong", {}, counts.length ? counts.join(" · ") : "no file changed"),
          w.change_seq === null ? null : ` (${plural(w.files.filter((f) => !f.noise).length, "file")} shown)`),
        leftOut ? el("p", { class: "left-out" }, leftOut, " (the rule: docs/replay.md, Workspace state).") : null,
        folded ? el("p", { class: "left-out" }, el("label", { for: "show-noise", class: "small" }, showNoise,
          ` Show ${plural(folded, "noise file")} the log holds (${w.folded.map((group) => group.pattern).join(", ")})`)) : null),
      w.files.length || w.vcs ? el("div", { class: "workspace-layout" }, treeBox, pane) : null);
    draw();
    const first = w.files.find((entry) => !entry.noise && entry.status !== "unchanged") || w.files.find((entry) => !entry.noise);
    if (first) pick(first);
    else pane.append(detail(null));
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => { closed = true; };
}
