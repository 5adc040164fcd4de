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
        case "kind":
          // Re-guess the meal from the device's hour, as the server did
          // from the owner's zone.
          var h = now.getHours(), kind = "snack";
          if (h >= 5 && h < 11) kind = "breakfast";
          else if (h >= 11 && h < 15) kind = "lunch";
          else if (h >= 17 && h < 22) kind = "dinner";
          el.checked = el.value === kind;
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

  // Ask before destructive forms (deleting a meal).
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  }, true);

  // Select the whole invite or share link on focus, ready to copy.
  document.addEventListener("focusin", function (e) {
    if (e.target.classList && e.target.classList.contains("copy")) e.target.select();
  });

  // Shared links: a copy button and the system share sheet, each only
  // where the browser has it; the link stays selectable text without them.
  function initShareButtons() {
    document.querySelectorAll("[data-copy]").forEach(function (btn) {
      var input = document.getElementById(btn.getAttribute("data-copy"));
      if (!input || !navigator.clipboard || !navigator.clipboard.writeText) return;
      btn.hidden = false;
      btn.addEventListener("click", function () {
        navigator.clipboard.writeText(input.value).then(function () {
          btn.textContent = "Copied";
          setTimeout(function () { btn.textContent = "Copy link"; }, 2000);
        }, function () { input.focus(); input.select(); });
      });
    });
    document.querySelectorAll("[data-share]").forEach(function (btn) {
      var input = document.getElementById(btn.getAttribute("data-share"));
      if (!input || !navigator.share) return;
      btn.hidden = false;
      btn.addEventListener("click", function () {
        // A generic title: the label is for the owner only.
        navigator.share({ title: "My meal diary", url: input.value }).catch(function () {});
      });
    });
    document.querySelectorAll("[data-print]").forEach(function (btn) {
      if (!window.print) return;
      btn.hidden = false;
      btn.addEventListener("click", function () { window.print(); });
    });
  }

  // The diary: the denser grid switches in place (the choice is a cookie
  // of this browser's, which the page reads), and the calendar strip
  // starts scrolled to today, or to the month's last logged day.
  function initDiary() {
    document.querySelectorAll("[data-grid-toggle]").forEach(function (link) {
      var days = document.querySelector(".days");
      if (!days) return;
      link.addEventListener("click", function (e) {
        e.preventDefault();
        var dense = !days.classList.contains("dense");
        days.classList.toggle("dense", dense);
        var sizes = dense ? days.dataset.sizesDense : days.dataset.sizesGrid;
        if (sizes) {
          days.querySelectorAll("[sizes]").forEach(function (el) { el.setAttribute("sizes", sizes); });
        }
        document.cookie = "ndiro_grid=" + (dense ? "dense; max-age=31536000" : "; max-age=0") +
          "; path=/meals; samesite=lax" + (location.protocol === "https:" ? "; secure" : "");
        link.textContent = dense ? "Larger photos" : "Smaller photos";
        link.href = link.href.replace(/grid=(dense|normal)/, "grid=" + (dense ? "normal" : "dense"));
      });
    });
    var strip = document.querySelector(".cal-strip");
    if (strip) {
      var mark = strip.querySelector("[aria-current]") || [].slice.call(strip.querySelectorAll("a")).pop();
      if (mark) {
        var over = mark.getBoundingClientRect().right - strip.getBoundingClientRect().right;
        if (over > 0) strip.scrollLeft += over + 8;
      }
    }
  }

  function initAll() {
    init();
    initShareButtons();
    initDiary();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
