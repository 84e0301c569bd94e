// The console's shared behaviour, on every admin page (templates/admin/base_site.html):
// - copy buttons of shortened ids (.copy-id[data-copy]) and of prompts ([data-copy-from]);
// - moments (<time class="when">): the hover text in the browser's timezone, 24-hour,
//   and the relative text kept current (also in parts a page swaps in later).
(function () {
  "use strict";
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function zoneName(date) {
    try {
      var parts = new Intl.DateTimeFormat(undefined, {timeZoneName: "short"}).formatToParts(date);
      for (var i = 0; i < parts.length; i++) { if (parts[i].type === "timeZoneName") { return parts[i].value; } }
    } catch (e) { /* old browser: no zone name */ }
    return "";
  }
  function absolute(date) {
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) + " " + zoneName(date);
  }
  function relative(seconds) {
    var s = Math.floor(Math.abs(seconds));
    var text;
    if (s < 5) { return "just now"; }
    if (s < 60) { text = s + " s"; }
    else if (s < 3600) { text = Math.floor(s / 60) + " min"; }
    else if (s < 86400) { text = Math.floor(s / 3600) + " h" + (Math.floor(s / 60) % 60 ? " " + Math.floor(s / 60) % 60 + " min" : ""); }
    else { text = Math.floor(s / 86400) + " d" + (Math.floor(s / 3600) % 24 ? " " + Math.floor(s / 3600) % 24 + " h" : ""); }
    return seconds >= 0 ? text + " ago" : "in " + text;
  }
  function localize() {
    var now = Date.now();
    document.querySelectorAll("time.when[datetime]").forEach(function (el) {
      var date = new Date(el.getAttribute("datetime"));
      if (isNaN(date.getTime())) { return; }
      el.title = absolute(date);
      el.textContent = relative((now - date.getTime()) / 1000);
    });
  }
  function copy(text, button) {
    function done() {
      button.classList.add("copied");
      var label = button.innerHTML;  // an icon or a word
      button.textContent = button.getAttribute("data-copied-label") || "copied";
      window.setTimeout(function () { button.innerHTML = label; button.classList.remove("copied"); }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallback(text); done(); });
    } else { fallback(text); done(); }
  }
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    try { document.execCommand("copy"); } catch (e) { /* nothing more to try */ }
    document.body.removeChild(area);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(".copy-id, [data-copy-from]");
    if (!button) { return; }
    event.preventDefault();
    var text = button.getAttribute("data-copy");
    var source = button.getAttribute("data-copy-from");
    if (source) { var el = document.querySelector(source); text = el ? el.textContent : ""; }
    window.__lastCopied = text;  // what the last copy put on the clipboard (tests read it)
    copy(text || "", button);
  });
  document.addEventListener("DOMContentLoaded", localize);
  window.setInterval(localize, 15000);
  window.consoleLocalize = localize;  // pages that swap in server HTML call it afterwards
}());
