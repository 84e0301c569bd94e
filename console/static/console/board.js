// The home page's agent board and "needs you" queue (console/_board.html).
// Renders both from the JSON the page was served with, then re-reads data-url every
// data-refresh-seconds and renders again: no reload. Sorting and the project filter are
// kept across refreshes. Queue buttons POST to data-act-url (the console's session and
// CSRF cookie; every action is a tool call on the server, recorded under the person's
// name). The page title and the tab's icon carry the number of items that need a person.
// Text is set with textContent only: nothing from the data is parsed as HTML.
(function () {
  "use strict";
  var box = document.getElementById("agent-board");
  var seed = document.getElementById("board-data");
  if (!box || !seed) { return; }
  var url = box.getAttribute("data-url");
  var actUrl = box.getAttribute("data-act-url");
  var promptUrl = box.getAttribute("data-prompt-url");
  var prompts = {};   // resume prompts read so far, by session id
  var seconds = parseInt(box.getAttribute("data-refresh-seconds"), 10) || 5;
  var data = JSON.parse(seed.textContent);
  var sort = {key: "state", descending: false};
  var busy = {};      // queue keys with an open confirmation, merge editor or request
  var baseTitle = document.title.replace(/^\(\d+\) /, "");

  var STATES = ["live", "late", "overdue", "paused", "crashed", "ended", "recovered"];
  var STATE_ORDER = {crashed: 0, overdue: 1, late: 2, paused: 3, live: 4, recovered: 5, ended: 6};
  var STATE_MARK = {live: "●", late: "◐", overdue: "◔", paused: "❚❚", crashed: "✖", ended: "■",
                    recovered: "✔"};
  var KIND_LABEL = {crashed: "Crashed session", conflict: "Conflict", blocked: "Blocked edit",
                    lock: "Task lock", contested: "Contested file", paused: "Paused past reset"};

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") { node.textContent = attrs[name]; }
      else if (name === "className") { node.className = attrs[name]; }
      else if (attrs[name] !== null && attrs[name] !== undefined) {
        node.setAttribute(name, attrs[name]);
      }
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) {
        node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
      }
    });
    return node;
  }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // One time format: 24-hour, the browser's (the operator's) timezone.
  function absolute(iso) {
    if (!iso) { return ""; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return iso; }
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }

  function span(secondsValue) {
    if (secondsValue === null || secondsValue === undefined) { return "—"; }
    var s = Math.max(0, Math.round(secondsValue));
    if (s < 90) { return s + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min"; }
    if (s < 86400) { return Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min"; }
    return Math.floor(s / 86400) + " d " + Math.floor(s % 86400 / 3600) + " h";
  }

  function secondsSince(iso) {
    if (!iso) { return null; }
    return (new Date(data.generatedAt).getTime() - new Date(iso).getTime()) / 1000;
  }

  function ago(iso) {
    return el("time", {datetime: iso, title: absolute(iso), text: span(secondsSince(iso)) + " ago"});
  }

  // A path's text with a break opportunity after each "/": it wraps at folders, not mid-name.
  function breakable(path) {
    var nodes = [];
    path.split("/").forEach(function (part, i, all) {
      nodes.push(part + (i < all.length - 1 ? "/" : ""));
      if (i < all.length - 1) { nodes.push(document.createElement("wbr")); }
    });
    return nodes;
  }

  function shortId(id) { return id && id.length > 12 ? id.slice(0, 8) + "…" : id; }

  function project() { return document.getElementById("board-project").value; }

  function shown(entry) { return !project() || entry.projectId === project(); }

  function agentName(row) {
    // A Codex session whose agent id is "codex" reads "codex", not "codex · codex".
    var kind = row.agentKind && row.agentKind !== row.agentId ? row.agentKind + " · " : "";
    return kind + (row.agentId || "unnamed agent");
  }

  function sortValue(row, key) {
    switch (key) {
      case "state": return [STATE_ORDER[row.state], -(row.heartbeatAgeSeconds || 0)];
      case "agent": return [agentName(row).toLowerCase()];
      case "project": return [(row.projectName || "").toLowerCase()];
      case "task": return [(row.taskName || row.taskId || "").toLowerCase()];
      case "heartbeat": return [row.heartbeatAgeSeconds === null ? Infinity : row.heartbeatAgeSeconds];
      case "now": return [row.tool ? -new Date(row.tool.at).getTime() : Infinity];
      case "duration": return [row.durationSeconds || 0];
      default: return [0];
    }
  }

  function compare(a, b) {
    var x = sortValue(a, sort.key), y = sortValue(b, sort.key);
    for (var i = 0; i < x.length; i++) {
      if (x[i] < y[i]) { return sort.descending ? 1 : -1; }
      if (x[i] > y[i]) { return sort.descending ? -1 : 1; }
    }
    return a.sessionId < b.sessionId ? -1 : 1;
  }

  function heartbeatCell(row) {
    var age = row.heartbeatAgeSeconds;
    var text = age === null ? "—" : span(age) + " ago";
    if (row.state === "paused") { text += " (paused: not judged)"; }
    var limit = "crash threshold " + span(data.crashThresholdSeconds);
    return el("td", {className: "hb hb-" + row.heartbeatLevel, "data-age": age,
                     title: absolute(row.lastHeartbeat) + " · " + limit}, [text]);
  }

  function nowCell(row) {
    var parts = [];
    if (row.file && ["live", "late", "overdue", "paused"].indexOf(row.state) >= 0) {
      parts.push(el("code", {className: "board-file", title: "claimed " + absolute(row.file.at)}, breakable(row.file.path)));
    }
    if (row.tool) {
      var tool = el("span", {className: "board-tool" + (row.tool.ok ? "" : " board-tool-failed")},
        [row.tool.summary || row.tool.tool, " · ", ago(row.tool.at)]);
      parts.push(tool);
    }
    if (!parts.length) { parts.push("—"); }
    return el("td", {className: "board-now"}, parts);
  }

  function rowNode(row) {
    var since = row.endedAt ? "ended " + absolute(row.endedAt) : "since " + absolute(row.startedAt);
    return el("tr", {className: "board-row state-" + row.state, "data-session": row.sessionId,
                     "data-state": row.state, "data-project": row.projectId}, [
      el("td", {className: "board-state"}, [
        el("span", {className: "mark mark-" + row.state, "aria-hidden": "true", text: STATE_MARK[row.state]}),
        " ", el("strong", {className: "state-word", text: row.state}),
        el("div", {className: "state-text", text: row.stateText})]),
      el("td", {className: "board-agent"}, [
        el("a", {href: row.url, text: agentName(row)}),
        el("div", {className: "id", title: row.sessionId, text: "session " + shortId(row.sessionId)})]),
      el("td", {className: "board-project", text: row.projectName}),
      el("td", {className: "board-task"}, row.taskId ? [
        el("span", {text: row.taskName || row.taskId}),
        el("div", {className: "id", text: row.taskId})] : ["no task"]),
      heartbeatCell(row),
      nowCell(row),
      el("td", {className: "board-duration", title: since, text: span(row.durationSeconds)})]);
  }

  function renderBoard() {
    var rows = data.rows.filter(shown).sort(compare);
    var body = document.getElementById("board-rows");
    body.replaceChildren.apply(body, rows.map(rowNode));
    document.getElementById("board-empty").hidden = rows.length > 0;
    document.getElementById("board-total").textContent = rows.length;
    var counts = el("span", {});
    STATES.forEach(function (state) {
      var n = rows.filter(function (r) { return r.state === state; }).length;
      counts.appendChild(el("span", {className: "state-count state-" + state, id: "count-" + state,
                                     "data-count": n}, [
        el("span", {className: "mark mark-" + state, "aria-hidden": "true", text: STATE_MARK[state]}),
        " " + n + " " + state]));
    });
    var line = document.getElementById("board-counts");
    line.replaceChildren.apply(line, Array.prototype.slice.call(counts.childNodes));
    document.getElementById("board-threshold").textContent = span(data.crashThresholdSeconds);
    document.querySelectorAll("#board-table button.sort").forEach(function (button) {
      var on = button.getAttribute("data-sort") === sort.key;
      button.parentNode.setAttribute("aria-sort", on ? (sort.descending ? "descending" : "ascending") : "none");
    });
  }

  // -- the queue ------------------------------------------------------------------------

  function csrf() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function note(text, ok) {
    var list = document.getElementById("needs-you-done");
    list.insertBefore(el("li", {className: ok ? "done-ok" : "done-failed"}, [
      el("time", {text: absolute(new Date().toISOString())}), " ", text]), list.firstChild);
    while (list.children.length > 5) { list.removeChild(list.lastChild); }
  }

  function act(item, body, area) {
    busy[item.key] = true;
    area.replaceChildren(el("span", {className: "help", text: "working…"}));
    fetch(actUrl, {method: "POST", credentials: "same-origin",
                   headers: {"Content-Type": "application/json", "X-CSRFToken": csrf()},
                   body: JSON.stringify(body)})
      .then(function (response) { return response.json().then(function (answer) { return [response.ok, answer]; }); })
      .then(function (result) {
        var answer = result[1];
        if (result[0]) { note(item.title + ": " + answer.message, true); }
        else { note(item.title + ": " + answer.error.code + " " + answer.error.message, false); }
      })
      .catch(function (error) { note(item.title + ": failed (" + error.message + ")", false); })
      .then(function () { delete busy[item.key]; refresh(); });
  }

  function payload(item, action) {
    var body = {action: action.action};
    if (item.kind === "conflict") {
      body = {action: "resolve", conflictId: item.conflictId, resolution: action.action};
    } else if (action.action === "release_lock") {
      body.taskId = item.taskId; body.sessionId = item.sessionId;
    } else if (action.action === "release_claim") {
      body.sessionId = action.sessionId || item.holderSessionId; body.path = item.path;
    } else {
      body.sessionId = item.sessionId;
    }
    return body;
  }

  // A crashed session's resume prompt, read when first asked for (then kept).
  function prompt(item) {
    if (prompts[item.sessionId]) { return Promise.resolve(prompts[item.sessionId]); }
    return fetch(promptUrl + "?sessionId=" + encodeURIComponent(item.sessionId),
                 {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.json(); })
      .then(function (answer) {
        if (!answer.success) { throw new Error(answer.error.code + " " + answer.error.message); }
        prompts[item.sessionId] = answer.prompt;
        return answer.prompt;
      });
  }

  function copy(item, button) {
    prompt(item).then(function (text) { write(text, button); }, function (error) {
      button.textContent = "Copy failed: " + error.message;
    });
  }

  function write(text, button) {
    function done(ok) {
      button.textContent = ok ? "Copied ✓" : "Copy failed: select the prompt below";
      button.setAttribute("data-copied", ok ? "yes" : "no");
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(fallback()); });
    } else { done(fallback()); }
    function fallback() {
      var area = el("textarea", {className: "copy-buffer"});
      area.value = text;
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      return ok;
    }
  }

  function actionsArea(item) {
    var area = el("div", {className: "queue-actions"});
    function reset() { delete busy[item.key]; area.replaceChildren.apply(area, buttons()); }
    function buttons() {
      return item.actions.map(function (action) {
        var button = el("button", {type: "button", className: "button queue-action",
                                   "data-action": action.action, text: action.label});
        button.addEventListener("click", function () {
          if (action.action === "copy_prompt") { copy(item, button); return; }
          busy[item.key] = true;
          if (action.action === "merge") {
            var value = el("textarea", {className: "merge-value", rows: 6, "aria-label": "merged value (JSON)"});
            value.value = action.value;
            var go = el("button", {type: "button", className: "button default queue-confirm", text: "Merge with this value"});
            var cancel = el("button", {type: "button", className: "button queue-cancel", text: "Cancel"});
            go.addEventListener("click", function () {
              var body = payload(item, action); body.value = value.value; act(item, body, area);
            });
            cancel.addEventListener("click", reset);
            area.replaceChildren(el("div", {className: "merge-editor"}, [value, el("div", {}, [go, " ", cancel])]));
            return;
          }
          var yes = el("button", {type: "button", className: "button default queue-confirm", text: "Yes, " + action.label.toLowerCase()});
          var no = el("button", {type: "button", className: "button queue-cancel", text: "Cancel"});
          yes.addEventListener("click", function () { act(item, payload(item, action), area); });
          no.addEventListener("click", reset);
          area.replaceChildren(el("span", {className: "queue-question", text: action.confirm || "Sure?"}), " ", yes, " ", no);
        });
        return button;
      });
    }
    area.replaceChildren.apply(area, buttons());
    return area;
  }

  function itemNode(item) {
    var label = KIND_LABEL[item.kind] + (item.severity ? " · " + item.severity : "");
    var children = [
      el("div", {className: "queue-head"}, [
        el("span", {className: "queue-kind kind-" + item.kind + (item.severity ? " severity-" + item.severity : ""), text: label}),
        " ", item.url ? el("a", {className: "queue-title", href: item.url, text: item.title})
                      : el("span", {className: "queue-title", text: item.title}),
        el("span", {className: "queue-meta"}, [item.projectName, " · waiting ",
          el("time", {datetime: item.since, title: "since " + absolute(item.since), text: span(secondsSince(item.since))})])]),
      el("div", {className: "queue-detail", text: item.detail})];
    if (item.kind === "conflict") {
      children.push(el("div", {className: "queue-sides"}, [
        el("div", {}, [el("strong", {text: "A · " + item.aLabel + " "}), el("code", {text: item.a})]),
        el("div", {}, [el("strong", {text: "B · " + item.bLabel + " "}), el("code", {text: item.b})])]));
    }
    if (item.kind === "crashed") {
      var text = el("pre", {text: "reading…"});
      var details = el("details", {className: "queue-prompt"}, [el("summary", {text: "resume prompt"}), text]);
      details.addEventListener("toggle", function () {
        // An open prompt keeps its node across refreshes (renderQueue), as a confirmation does.
        if (details.open) { busy[item.key] = true; } else { delete busy[item.key]; }
        if (details.open) {
          prompt(item).then(function (value) { text.textContent = value; },
                            function (error) { text.textContent = "Could not read it: " + error.message; });
        }
      });
      children.push(details);
    }
    children.push(actionsArea(item));
    return el("li", {className: "queue-item kind-" + item.kind, "data-key": item.key, "data-kind": item.kind}, children);
  }

  function renderQueue() {
    var list = document.getElementById("needs-you-items");
    var items = data.queue.filter(shown);
    var kept = {};
    // An item with an open confirmation keeps its node (and the person's place in it).
    Array.prototype.forEach.call(list.children, function (node) {
      if (busy[node.getAttribute("data-key")]) { kept[node.getAttribute("data-key")] = node; }
    });
    list.replaceChildren.apply(list, items.map(function (item) { return kept[item.key] || itemNode(item); }));
    document.getElementById("needs-you-empty").hidden = items.length > 0;
    document.getElementById("needs-you-count").textContent = items.length;
    document.getElementById("needs-you").classList.toggle("attention", items.length > 0);
    signal(items.length);
  }

  // The count in the title and on the tab's icon (an SVG drawn here: nothing fetched).
  function signal(count) {
    document.title = (count ? "(" + count + ") " : "") + baseTitle;
    var label = count > 99 ? "99+" : String(count);
    var svg = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">' +
      '<circle cx="16" cy="16" r="15" fill="' + (count ? "#ba2121" : "#2e7d32") + '"/>' +
      '<text x="16" y="21.5" font-size="' + (label.length > 2 ? 11 : 16) + '" font-family="sans-serif" ' +
      'font-weight="bold" text-anchor="middle" fill="#fff">' + (count ? label : "✓") + "</text></svg>";
    var icon = document.getElementById("board-favicon");
    if (icon) {
      icon.setAttribute("href", "data:image/svg+xml," + encodeURIComponent(svg));
      icon.setAttribute("data-count", String(count));
    }
  }

  function renderProjects() {
    var select = document.getElementById("board-project");
    var chosen = select.value;
    var options = [el("option", {value: "", text: "every project"})].concat(
      data.projects.map(function (p) { return el("option", {value: p.id, text: p.name}); }));
    select.replaceChildren.apply(select, options);
    select.value = data.projects.some(function (p) { return p.id === chosen; }) ? chosen : "";
  }

  function render() {
    renderProjects();
    renderBoard();
    renderQueue();
    box.setAttribute("data-generated-at", data.generatedAt);
  }

  // One request at a time: a refresh asked for meanwhile (after an action) runs next.
  var timer = null, inflight = false, again = false;
  function refresh() {
    if (inflight) { again = true; return; }
    if (timer !== null) { window.clearTimeout(timer); timer = null; }
    inflight = true;
    var status = document.getElementById("board-refreshed");
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (fresh) {
        data = fresh;
        render();
        box.setAttribute("data-refreshes", String(1 + parseInt(box.getAttribute("data-refreshes"), 10)));
        status.textContent = "updated " + absolute(new Date().toISOString()).slice(11);
      })
      .catch(function (error) { status.textContent = "update failed (" + error.message + "), retrying"; })
      .then(function () {
        inflight = false;
        if (again) { again = false; refresh(); }
        else { timer = window.setTimeout(refresh, seconds * 1000); }
      });
  }

  document.getElementById("board-project").addEventListener("change", function () {
    renderBoard(); renderQueue();
  });
  document.querySelectorAll("#board-table button.sort").forEach(function (button) {
    button.addEventListener("click", function () {
      var key = button.getAttribute("data-sort");
      sort = {key: key, descending: sort.key === key ? !sort.descending : false};
      renderBoard();
    });
  });
  render();
  if (window.performance && performance.mark) { performance.mark("board-rendered"); }
  timer = window.setTimeout(refresh, seconds * 1000);
}());
