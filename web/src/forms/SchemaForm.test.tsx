import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { SchemaForm } from "./SchemaForm";
import { fill, initialDraft, serverFieldErrors, type FormField } from "./schema";
import { ApiError } from "../api";

afterEach(cleanup);

// The agent form as GET /agents/schema serves it (abridged), and OpenAI's provider form.
const agentFields: FormField[] = [
  { name: "name", label: "Name", type: "string", required: true, validation: { min_length: 1, max_length: 100 } },
  {
    name: "provider",
    label: "LLM provider",
    type: "select",
    default: "offline",
    options: [
      { value: "offline", label: "Offline demo" },
      { value: "openai", label: "OpenAI" },
    ],
  },
  { name: "persona", label: "Persona", type: "text", default: "", description: "Who the agent is." },
  { name: "recent_turns", label: "Recent turns", type: "integer", default: 10, validation: { minimum: 0, maximum: 100 } },
  { name: "metadata", label: "Metadata", type: "json", description: "Free JSON." },
];
const providerFields: FormField[] = [
  { name: "api_key", label: "API key", type: "string", secret: true, required: true, validation: { min_length: 1 } },
  { name: "base_url", label: "Base URL", type: "url", nullable: true },
  { name: "verbose", label: "Verbose", type: "boolean", default: false },
  { name: "temperature", label: "Temperature", type: "number", validation: { minimum: 0, maximum: 2 } },
  { name: "region", label: "Region", type: "string", default: "us-east-1", validation: { pattern: "^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$" } },
];

describe("fill", () => {
  it("sends a multiselect's chosen options as a list, and shows the stored ones chosen", () => {
    const fields: FormField[] = [
      {
        name: "specialists",
        label: "Specialists",
        type: "multiselect",
        default: [],
        options: [
          { value: "a1", label: "Billing" },
          { value: "a2", label: "Tech" },
        ],
      },
    ];
    expect(fill(fields, initialDraft(fields)).payload).toEqual({ specialists: [] });
    const stored = initialDraft(fields, { specialists: ["a2"] });
    expect(stored.specialists).toEqual(["1"]);
    render(<SchemaForm fields={fields} values={{ specialists: ["a2"] }} submitLabel="Save" onSubmit={async () => {}} />);
    const billing = screen.getByLabelText("Billing") as HTMLInputElement;
    expect(billing.checked).toBe(false);
    expect((screen.getByLabelText("Tech") as HTMLInputElement).checked).toBe(true);
    fireEvent.click(billing);
    expect(billing.checked).toBe(true);
    expect(fill(fields, { specialists: ["1", "0"] }).payload).toEqual({ specialists: ["a2", "a1"] });
  });

  it("turns the defaults into what the API takes, leaving empty optional fields out", () => {
    const draft = initialDraft(agentFields);
    draft.name = "Kit";
    expect(fill(agentFields, draft)).toEqual({
      payload: { name: "Kit", provider: "offline", persona: "", recent_turns: 10 },
      errors: {},
    });
  });

  it("parses JSON fields and numbers, and says what is wrong", () => {
    const draft = { ...initialDraft(agentFields), name: "", recent_turns: "1.5", metadata: "{bad" };
    const { errors } = fill(agentFields, draft);
    expect(errors.name).toMatch(/required/);
    expect(errors.recent_turns).toMatch(/whole number/);
    expect(errors.metadata).toMatch(/not valid JSON/);
    const ok = fill(agentFields, { ...draft, name: "A", recent_turns: "3", metadata: '{"team": "blue"}' });
    expect(ok.payload).toMatchObject({ recent_turns: 3, metadata: { team: "blue" } });
  });

  it("checks limits, patterns, URLs and sends null for an empty nullable field", () => {
    const draft = { ...initialDraft(providerFields), api_key: "k", temperature: "3", region: "Mars", base_url: "ftp://x" };
    const { errors } = fill(providerFields, draft);
    expect(Object.keys(errors).sort()).toEqual(["base_url", "region", "temperature"]);
    const ok = fill(providerFields, { ...draft, temperature: "", region: "eu-west-1", base_url: "" });
    expect(ok).toEqual({ payload: { api_key: "k", base_url: null, verbose: false, region: "eu-west-1" }, errors: {} });
  });

  it("leaves a stored secret out when left empty, and never shows it", () => {
    const draft = initialDraft(providerFields, { api_key: "sk-...1234", base_url: "https://example.com" });
    expect(draft.api_key).toBe("");
    expect(draft.base_url).toBe("https://example.com");
    expect(fill(providerFields, draft, new Set(["api_key"])).payload).not.toHaveProperty("api_key");
    expect(fill(providerFields, draft).errors.api_key).toMatch(/required/);
  });

  it("reads field errors from the API's 422", () => {
    expect(serverFieldErrors({ errors: [{ loc: ["body", "metadata"], message: "Input should be a valid dictionary" }] })).toEqual({
      metadata: "Input should be a valid dictionary",
    });
  });
});

describe("SchemaForm", () => {
  it("renders every field with its label tied to its input, help text and the right control", () => {
    render(<SchemaForm fields={[...agentFields, ...providerFields]} submitLabel="Save" onSubmit={async () => {}} />);
    expect(screen.getByLabelText(/^Name/)).toHaveProperty("type", "text");
    expect(screen.getByLabelText(/LLM provider/).tagName).toBe("SELECT");
    expect(screen.getByLabelText(/Persona/).tagName).toBe("TEXTAREA");
    expect(screen.getByLabelText(/Metadata/).tagName).toBe("TEXTAREA");
    expect(screen.getByLabelText(/Recent turns/)).toHaveProperty("type", "number");
    expect(screen.getByLabelText(/API key/)).toHaveProperty("type", "password");
    expect(screen.getByLabelText(/Base URL/)).toHaveProperty("type", "url");
    expect(screen.getByLabelText(/Verbose/)).toHaveProperty("type", "checkbox");
    expect(screen.getByLabelText(/Persona/).getAttribute("aria-describedby")).toBeTruthy();
    expect(screen.getByText("Who the agent is.").id).toBe(screen.getByLabelText(/Persona/).getAttribute("aria-describedby"));
  });

  it("submits the parsed payload", async () => {
    const onSubmit = vi.fn(async () => {});
    render(<SchemaForm fields={agentFields} submitLabel="Create" onSubmit={onSubmit} />);
    fireEvent.change(screen.getByLabelText(/^Name/), { target: { value: "Kit" } });
    fireEvent.change(screen.getByLabelText(/LLM provider/), { target: { value: "1" } });
    fireEvent.change(screen.getByLabelText(/Metadata/), { target: { value: '{"a": [1, 2]}' } });
    fireEvent.click(screen.getByRole("button", { name: "Create" }));
    await vi.waitFor(() => expect(onSubmit).toHaveBeenCalledOnce());
    expect(onSubmit).toHaveBeenCalledWith({ name: "Kit", provider: "openai", persona: "", recent_turns: 10, metadata: { a: [1, 2] } });
  });

  it("does not submit an invalid form, marks the field and focuses it", async () => {
    const onSubmit = vi.fn(async () => {});
    render(<SchemaForm fields={agentFields} submitLabel="Create" onSubmit={onSubmit} />);
    fireEvent.click(screen.getByRole("button", { name: "Create" }));
    const name = screen.getByLabelText(/^Name/);
    await vi.waitFor(() => expect(name.getAttribute("aria-invalid")).toBe("true"));
    expect(document.activeElement).toBe(name);
    expect(screen.getByRole("alert").textContent).toMatch(/Name is required/);
    expect(onSubmit).not.toHaveBeenCalled();
  });

  it("shows the server's refusal and its field errors", async () => {
    const onSubmit = vi.fn(async () => {
      throw new ApiError(422, "validation_error", "The request is not valid: body.name: too long", {
        errors: [{ loc: ["body", "name"], message: "too long" }],
      });
    });
    render(<SchemaForm fields={agentFields} values={{ name: "Kit" }} submitLabel="Save" onSubmit={onSubmit} />);
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await screen.findByText(/The request is not valid/);
    expect(screen.getByText("too long")).toBeTruthy();
  });
});
