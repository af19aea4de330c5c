// The workbench's little script: the goal buttons fill the goal's field, and the comparison's
// page follows its progress until the results are ready. Every page works without it.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button.use-goal")) {
    button.addEventListener("click", () => {
      const field = document.getElementById("privacy");
      field.value = button.dataset.goal;
      field.focus();
    });
  }
  const area = document.getElementById("progress-area");
  if (area) {
    const bar = document.getElementById("progress");
    const label = document.getElementById("progress-label");
    const status = document.getElementById("progress-status");
    const poll = async () => {
      try {
        const answer = await fetch(area.dataset.poll, {headers: {Accept: "application/json"}});
        const state = await answer.json();
        if (state.finished) {
          window.location.reload();
          return;
        }
        bar.max = Math.max(state.total, 1);
        bar.value = state.done;
        label.textContent = state.what;
        status.textContent = `Step ${state.done} of ${state.total || "?"} (${state.seconds} s)`;
      } catch (error) {
        status.textContent = "Lost contact with the workbench; refresh the page.";
        return;
      }
      window.setTimeout(poll, 400);
    };
    window.setTimeout(poll, 300);
  }
});
