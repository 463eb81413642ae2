// The console's script. Every page also works without it: the forms post to the server.
// On the model screen it writes through the JSON API (spec 4.2: POST and DELETE /api/platform/models) with the
// session's CSRF token in X-CSRF-Token, and shows the API's 422 problems next to the fields they name.

const csrfToken = () => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
};

document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
    return;
  }
  const api = form.getAttribute("data-api");
  if (api === "model-save") {
    event.preventDefault();
    saveModel(form);
  } else if (api === "model-delete") {
    event.preventDefault();
    deleteModel(form);
  }
});

document.addEventListener("click", async (event) => {
  const id = event.target.getAttribute && event.target.getAttribute("data-copy");
  if (!id) return;
  const text = document.getElementById(id).textContent;
  try { await navigator.clipboard.writeText(text); event.target.textContent = "Copied"; }
  catch (err) { event.target.textContent = "Select and copy by hand"; }
});

// One JSON request to this console's API: {status, data}; status 0 when the server could not be reached.
async function callApi(method, url, body) {
  const headers = { "Accept": "application/json", "X-CSRF-Token": csrfToken() };
  const init = { method, headers, credentials: "same-origin", redirect: "error" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    return { status: 0, data: null };
  }
  let data = null;
  try { data = await response.json(); } catch (err) { data = null; }
  return { status: response.status, data };
}

// What a failed answer means to the user, in one sentence.
function failureMessage(status, data) {
  if (status === 0) return "The console could not reach the server; nothing was changed. Try again.";
  if (status === 401) return "Your session has ended; nothing was changed. Sign in again (reload the page).";
  const message = data && data.error && data.error.message;
  return message ? `${message} (${status})` : `The server answered ${status}; nothing was changed.`;
}

// The body of POST /api/platform/models from the model form (the same mapping as the form post's).
function modelBody(form) {
  const value = (name) => (form.elements.namedItem(name) ? form.elements.namedItem(name).value : "");
  const optional = (name) => value(name).trim() || null;
  const contextWindow = optional("contextWindow");
  const model = {
    model_id: value("model_id").trim(),
    displayName: value("displayName"),
    modelType: value("modelType"),
    // digits are a number; anything else goes as typed, so the API names the problem
    contextWindow:
      contextWindow === null ? null : /^[0-9]+$/.test(contextWindow) ? Number(contextWindow) : contextWindow,
    // prices as decimal strings: the API stores them exactly, never as a binary float
    inputPricePerMToken: optional("inputPricePerMToken"),
    outputPricePerMToken: optional("outputPricePerMToken"),
    capabilities: Array.from(form.querySelectorAll('input[name="capabilities"]:checked'), (c) => c.value),
  };
  if (optional("id")) model.id = optional("id");
  const body = { provider: value("provider"), model };
  const effective = optional("effectiveAt");
  if (effective) body.effectiveAt = asUtc(effective);
  return body;
}

// The browser's date-time field sends no zone; the console shows UTC, so such a time is UTC.
function asUtc(text) {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text) ? `${text}Z` : text;
}

function clearProblems(form) {
  form.querySelectorAll(".field-error").forEach((node) => node.remove());
  form.querySelectorAll("[aria-invalid]").forEach((node) => {
    node.removeAttribute("aria-invalid");
    node.removeAttribute("aria-describedby");
  });
  const box = form.parentElement.querySelector("[data-form-problems]");
  box.hidden = true;
  box.replaceChildren();
}

// The API's problems ({field, problem}, e.g. "model.contextWindow") next to the fields they name, and all of
// them in the form's alert box; problems naming no field of the form go to the box only.
function showProblems(form, problems, headline) {
  const box = form.parentElement.querySelector("[data-form-problems]");
  const names = new Set(Array.from(form.elements, (e) => e.name).filter(Boolean));
  const strong = document.createElement("strong");
  strong.textContent = headline;
  const list = document.createElement("ul");
  let first = null;
  for (const { field, problem: said } of problems) {
    const problem = String(said).replace(/^Value error, /, "");
    const name = String(field || "").split(".").find((part) => names.has(part));
    const item = document.createElement("li");
    item.textContent = name ? `${name}: ${problem}` : problem;
    list.append(item);
    if (!name) continue;
    const control = form.elements.namedItem(name);
    const input = control instanceof RadioNodeList ? control[0] : control;
    const holder = name === "capabilities" ? input.closest("fieldset") : input.closest("label") || input;
    const note = document.createElement("span");
    note.className = "field-error";
    note.id = `problem-${name}`;
    note.textContent = problem;
    if (!holder.querySelector(`#problem-${name}`)) holder.append(note);
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", note.id);
    first = first || input;
  }
  box.replaceChildren(strong, list);
  box.hidden = false;
  if (first) first.focus();
}

function busy(form, on) {
  form.setAttribute("aria-busy", on ? "true" : "false");
  form.querySelectorAll("button").forEach((button) => { button.disabled = on; });
}

function showDone(done, model) {
  window.location.assign(`/models?${new URLSearchParams({ done, model })}`);
}

async function saveModel(form) {
  clearProblems(form);
  busy(form, true);
  const { status, data } = await callApi("POST", "/api/platform/models", modelBody(form));
  busy(form, false);
  if ((status === 200 || status === 201) && data) {
    showDone(data.created ? "created" : "updated", `${data.provider}/${data.model.model_id}`);
    return;
  }
  const problems = status === 422 && data && data.error && data.error.details && data.error.details.problems;
  if (problems && problems.length) showProblems(form, problems, "Please fix:");
  else showProblems(form, [{ field: "", problem: failureMessage(status, data) }], "Not saved:");
}

async function deleteModel(form) {
  const provider = form.elements.namedItem("provider").value;
  const modelId = form.elements.namedItem("model_id").value;
  const box = document.getElementById("api-problems");
  box.hidden = true;
  busy(form, true);
  const query = new URLSearchParams({ model_id: modelId, provider });
  const { status, data } = await callApi("DELETE", `/api/platform/models?${query}`);
  busy(form, false);
  if (status === 200 && data) {
    showDone("deleted", `${data.provider}/${data.model_id}`);
    return;
  }
  box.textContent = `Could not delete ${provider}/${modelId}: ${failureMessage(status, data)}`;
  box.hidden = false;
}
