// ndiro enhances server-rendered pages; everything works without this file.
(function () {
  "use strict";
  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function init() {
    var now = new Date();
    // A new meal defaults to the device's own clock, not the server's idea
    // of the owner's time zone.
    document.querySelectorAll("[data-default]").forEach(function (el) {
      switch (el.getAttribute("data-default")) {
        case "local-date":
          el.value = now.getFullYear() + "-" + pad(now.getMonth() + 1) + "-" + pad(now.getDate());
          break;
        case "local-time":
          el.value = pad(now.getHours()) + ":" + pad(now.getMinutes());
          break;
        case "local-tz":
          try { el.value = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) {}
          break;
      }
    });
    // "Use this device's zone" on the account page.
    document.querySelectorAll("[data-fill-tz]").forEach(function (btn) {
      var input = document.getElementById(btn.getAttribute("data-fill-tz"));
      var tz = "";
      try { tz = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) {}
      if (!input || !tz) return;
      btn.hidden = false;
      btn.addEventListener("click", function () { input.value = tz; });
    });
  }

  // Select the whole invite or share link on focus, ready to copy.
  document.addEventListener("focusin", function (e) {
    if (e.target.classList && e.target.classList.contains("copy")) e.target.select();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
