// ndiro enhances server-rendered pages; everything works without this file.
(function () {
  "use strict";
  // Select the whole invite or share link on focus, ready to copy.
  document.addEventListener("focusin", function (e) {
    if (e.target.classList && e.target.classList.contains("copy")) e.target.select();
  });
})();
