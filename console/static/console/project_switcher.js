// The project switcher in the admin header: choosing a project submits the form at once
// (the Show button stays for browsers without JavaScript).
(function () {
  "use strict";
  var form = document.getElementById("project-switcher");
  if (!form) { return; }
  var select = document.getElementById("project-switcher-select");
  var button = document.getElementById("project-switcher-go");
  if (button) { button.style.display = "none"; }
  select.addEventListener("change", function () { form.submit(); });
}());
