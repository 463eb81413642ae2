"""Key formats of application services: AI, payments, messaging, SaaS APIs (a vendor's fixed prefix or shape,
from CredSweeper's and gitleaks' public rule lists)."""

from __future__ import annotations

from stockade.guardrails.checks.exfiltration.key_format import Body, KeyFormat, fmt
from stockade.guardrails.checks.exfiltration.placement import EXAMPLE_LINE
from stockade.guardrails.checks.exfiltration.token_structure import discord_bot_ok
from stockade.guardrails.checks.exfiltration.validators import mixed_token_ok, salesforce_org_id_ok

APP_FORMATS: tuple[KeyFormat, ...] = (
    fmt("slack_token", r"\b((?:xox[a-z]|xapp)-[0-9A-Za-z\-]{10,})"),
    fmt(
        "slack_webhook",
        r"((?:https?://)?hooks\.slack\.com/(?:services/T[0-9A-Z]{8,16}/B[0-9A-Z]{8,16}/[0-9A-Za-z_]{24}(?![0-9A-Za-z_])|workflows/[A-Za-z0-9+/_\-]{20,}))",
        ("hooks.slack.com/",),
        context=(EXAMPLE_LINE,),
        body=Body.WORDS,
    ),
    fmt(
        "discord_webhook",
        r"(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]{40,})",
        (".com/api/webhooks/",),
        body=Body.WORDS,
    ),
    fmt(
        "stripe_key",
        r"\b((?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,})\b",
        ("live", "test"),
        context=(EXAMPLE_LINE,),
    ),
    fmt(
        "openai_key",
        r"\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}(?:T3BlbkFJ|9wZW5BS|PcGVuQU)[A-Za-z0-9_\-]{16,})",
        ("T3BlbkFJ", "9wZW5BS", "PcGVuQU"),
    ),
    fmt("anthropic_key", r"\b(sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{64,})", ("sk-ant-",)),
    fmt(
        "groq_key",
        r"\b(gsk_(?:[A-Za-z0-9]{48,}|[A-Za-z0-9_\-]{8,40}(?:WGdyb3FY|hncm9xW|YZ3JvcV)[A-Za-z0-9_\-]{8,40}))\b",
        ("gsk_",),
    ),
    fmt("deepseek_key", r"\b(sk-[a-f0-9]{32,64})\b", ("sk-",)),
    fmt("perplexity_key", r"\b(pplx-[A-Za-z0-9_\-]{40,})", ("pplx-",)),
    fmt("xai_key", r"\b(xai-[A-Za-z0-9_\-]{70,})", ("xai-",)),
    fmt("tavily_key", r"\b(tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,})\b", ("tvly-",)),
    fmt("together_key", r"\b(tgp_v1_[A-Za-z0-9_\-]{40,})", ("tgp_v1_",)),
    fmt("llama_key", r"\b(LLM\|[0-9]{10,}\|[A-Za-z0-9_\-]{20,}|llx-[A-Za-z0-9_\-]{48})", ("LLM|", "llx-")),
    fmt("huggingface_token", r"\b(hf_[A-Za-z0-9]{34,})\b", ("hf_",)),
    fmt("sendgrid_key", r"\b(SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})", ("SG.",)),
    fmt("mailgun_key", r"\b(key-[0-9a-z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b"),
    fmt("mailchimp_key", r"(?<![A-Za-z0-9_\-])([0-9a-zA-Z_\-]{32}-us\d{1,2})\b", ("-us",)),
    fmt("brevo_key", r"\b(xkeysib-[a-f0-9]{64}-[A-Za-z0-9_\-]{16})(?![A-Za-z0-9_\-])", ("xkeysib-",)),
    # a SID's 32 hex digits are in one case
    fmt(
        "twilio_key",
        r"\b((?:AC|AD|AL|CA|CF|CL|CN|CR|FW|IP|KS|MM|NO|PK|PN|QU|RE|SC|SD|SK|SM|TR|UT|XE|XR)(?:[0-9a-f]{32}|[0-9A-F]{32}))\b",
    ),
    fmt("telegram_bot_token", r"\b(\d{8,10}:AA[0-9A-Za-z_\-]{33})", (":AA",)),
    fmt(
        "discord_bot_token",
        r"\b([MNO][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,40})(?![A-Za-z\d_\-])",
        validator=discord_bot_ok,
    ),
    fmt(
        "square_token",
        r"\b(EAAA[0-9A-Za-z_\-]{60}|sq0[a-z]{3}-[0-9A-Za-z_\-]{22}(?:[0-9A-Za-z_\-]{21})?)(?![0-9A-Za-z_\-])",
        ("EAAA", "sq0"),
    ),
    fmt("shopify_token", r"\b(shp(?:at|ca|pa|ss|tka)_[a-fA-F0-9]{32})\b", ("shp",)),
    fmt("facebook_token", r"\b(EAA[A-Za-z0-9]{30,})", ("EAA",)),
    fmt("instagram_token", r"\b(IGQV[A-Za-z0-9_\-]{100,})", ("IGQV",)),
    fmt("dropbox_token", r"\b(sl\.(?:u\.)?[A-Za-z0-9_\-]{77,})", ("sl.",)),
    fmt("figma_token", r"\b(fig[dup]_[A-Za-z0-9_\-]{40,})", ("fig",)),
    fmt("linear_key", r"\b(lin_api_[A-Za-z0-9]{40})\b", ("lin_api_",)),
    fmt(
        "notion_token",
        r"\b(secret_[A-Za-z0-9]{43,46}|ntn_\d{9}[A-Za-z0-9_\-]{36,})(?![A-Za-z0-9_\-])",
        ("secret_", "ntn_"),
    ),
    fmt("postman_key", r"\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34}|PMAT-[0-9A-Z]{26})\b", ("PMA",)),
    fmt("posthog_key", r"\b(ph[cxr]_[A-Za-z0-9]{39,})\b"),
    fmt(
        "braintree_token",
        r"\b(access_token\$production\$[a-z0-9]{16}\$[a-z0-9]{32})\b",
        ("access_token$production$",),
        context=(EXAMPLE_LINE,),
    ),
    fmt("wundergraph_key", r"\b(cosmo_[A-Za-z0-9]{32,})", ("cosmo_",)),
    fmt("stripe_webhook_secret", r"\b(whsec_[A-Za-z0-9]{32,})\b", ("whsec_",)),
    fmt("posthog_personal_key", r"\b(pha_[A-Za-z0-9]{40,})\b", ("pha_",)),
    fmt("posthog_secret_key", r"\b(phs_[A-Za-z0-9]{40,})\b", ("phs_",)),
    fmt("facebook_app_token", r"\b(\d{12,18}\|[A-Za-z0-9_\-]{24,28})(?![A-Za-z0-9_+\-])"),
    fmt("dropbox_long_term_token", r"\b([A-Za-z0-9]{11}A{10}[A-Za-z0-9_\-]{43})\b", body=Body.STRUCTURED),
    fmt("salesforce_client_id", r"\b(3MVG[A-Za-z0-9._]{24,})", ("3MVG",)),
    fmt("x_bearer_token", r"\b(A{20,22}[A-Za-z0-9%]{30,})", body=Body.STRUCTURED),
    fmt("salesforce_token", r"\b(00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{20,})", ("00D",)),
    fmt("salesforce_org_id", r"\b(00D[A-Za-z0-9]{12,15})\b", ("00D",), validator=salesforce_org_id_ok),
    # a WeChat app id is public: a lower score, masked, not blocked on its own
    fmt("wechat_app_id", r"\b(wx[0-9a-f]{16})\b", severity=0.5),
    fmt("mapbox_secret_token", r"\b(sk\.eyJ[A-Za-z0-9_\-]{30,}\.[A-Za-z0-9_\-]{20,})", ("sk.eyJ",)),
    fmt("readme_key", r"\b(rdme_[a-z0-9]{70})\b", ("rdme_",)),
    fmt("typeform_token", r"\b(tfp_[A-Za-z0-9_\-.=]{59,})", ("tfp_",)),
    fmt("shippo_token", r"\b(shippo_(?:live|test)_[a-f0-9]{40})\b", ("shippo_",)),
    fmt("duffel_token", r"\b(duffel_(?:test|live)_[A-Za-z0-9_\-=]{43})", ("duffel_",)),
    fmt("easypost_key", r"\b(EZ[AT]K[A-Za-z0-9]{54})\b"),
    fmt(
        "flutterwave_key",
        r"\b(FLW(?:SECK|PUBK)_TEST-[a-h0-9]{32}-X|FLWSECK-[a-h0-9]{32}-X)\b",
        ("_TEST-", "SECK-"),
    ),
    fmt("frameio_token", r"\b(fio-u-[A-Za-z0-9_\-=]{64})", ("fio-u-",)),
    fmt(
        "hubspot_token",
        r"\b(pat-(?:na|eu)1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b",
        ("pat-",),
    ),
    fmt("langsmith_key", r"\b(lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b", ("lsv2_",)),
    fmt("replicate_token", r"\b(r8_[A-Za-z0-9]{37})\b", ("r8_",)),
    fmt("openrouter_key", r"\b(sk-or-v1-[a-f0-9]{64})\b", ("sk-or-v1-",)),
    fmt("nvidia_key", r"\b(nvapi-[A-Za-z0-9_\-]{64})", ("nvapi-",)),
    fmt("adobe_client_secret", r"\b(p8e-[A-Za-z0-9]{32})\b", ("p8e-",)),
    fmt("airtable_pat", r"\b(pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b", ("pat",)),
    fmt("lob_key", r"\b((?:live|test)_[a-f0-9]{35})\b", ("live", "test")),
    fmt("contentful_token", r"\b(CFPAT-[A-Za-z0-9_\-=]{43})", ("CFPAT-",)),
    # Composio (ak_, oak_, uak_, ck_): a short prefix, so kept only when random (CredSweeper's weak rule)
    fmt(
        "composio_key",
        r"(?<![0-9A-Za-z+/_\-])((?:[ou]?a|c)k_[0-9A-Za-z_\-]{16,80})(?![0-9A-Za-z+/_\-])",
        ("k_",),
        validator=mixed_token_ok,
    ),
)
