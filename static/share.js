// ndiro: what a share recipient's pages add with JavaScript. On a meal's
// page ([data-swipe]) the arrow keys and a sideways swipe open the meal
// before or after it (the page's rel=prev and rel=next links, which do
// the same without this file).
(function () {
  "use strict";
  function go(rel) {
    var a = document.querySelector('a[rel="' + rel + '"]');
    if (a) window.location.href = a.href;
  }
  function typing(el) {
    return !!el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(el.tagName));
  }
  function init() {
    var root = document.querySelector("[data-swipe]");
    if (!root) return;
    document.addEventListener("keydown", function (e) {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || typing(e.target)) return;
      if (e.key === "ArrowLeft") { e.preventDefault(); go("prev"); }
      else if (e.key === "ArrowRight") { e.preventDefault(); go("next"); }
    });
    var x0 = null, y0 = 0;
    root.addEventListener("touchstart", function (e) {
      x0 = null;
      if (e.touches.length !== 1 || typing(e.target) || (e.target.closest && e.target.closest("form"))) return;
      x0 = e.touches[0].clientX;
      y0 = e.touches[0].clientY;
    }, { passive: true });
    root.addEventListener("touchend", function (e) {
      if (x0 === null || !e.changedTouches.length) return;
      var t = e.changedTouches[0], dx = t.clientX - x0, dy = t.clientY - y0;
      x0 = null;
      // A clear sideways swipe: at least 60 px, mostly horizontal.
      if (Math.abs(dx) < 60 || Math.abs(dy) > Math.abs(dx) / 2) return;
      go(dx < 0 ? "next" : "prev");
    }, { passive: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
