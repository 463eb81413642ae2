// Small progressive enhancements; every page works without JavaScript.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("click", async (event) => {
  const id = event.target.getAttribute && event.target.getAttribute("data-copy");
  if (!id) return;
  const text = document.getElementById(id).textContent;
  try { await navigator.clipboard.writeText(text); event.target.textContent = "Copied"; }
  catch (err) { event.target.textContent = "Select and copy by hand"; }
});
