// Keeps the admin index's fleet overview current: re-fetches the server-rendered partial
// every data-refresh-seconds and swaps it in, so the page never needs a reload.
(function () {
  "use strict";
  var box = document.getElementById("fleet-overview");
  if (!box) { return; }
  var url = box.getAttribute("data-refresh-url");
  var seconds = parseInt(box.getAttribute("data-refresh-seconds"), 10) || 5;
  var status = document.getElementById("overview-refreshed");

  function refresh() {
    fetch(url, {credentials: "same-origin", headers: {"X-Requested-With": "fetch"}})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        document.getElementById("overview-body").innerHTML = html;
        box.setAttribute("data-refreshes", String(1 + parseInt(box.getAttribute("data-refreshes") || "0", 10)));
        if (status) { status.textContent = "updated " + new Date().toLocaleTimeString(); }
      })
      .catch(function (error) {
        if (status) { status.textContent = "update failed (" + error.message + "), retrying"; }
      })
      .then(function () { window.setTimeout(refresh, seconds * 1000); });
  }
  window.setTimeout(refresh, seconds * 1000);
}());
