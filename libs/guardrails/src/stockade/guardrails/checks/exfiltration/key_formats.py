"""Known credential formats (vendor prefixes and fixed shapes). Each pattern's group 1 (or the whole match)
is the secret value."""

from __future__ import annotations

import re

_B64 = r"A-Za-z0-9+/"
KEY_FORMATS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        "aws_access_key_id": r"\b((?:A3T[0-9A-Z]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[0-9A-Z]{16,17})\b",
        "aws_mws_key": r"\b(amzn\.mws\.[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12})\b",
        "aws_bedrock_key": r"\b(ABSK[A-Za-z0-9+/]{28,}=*)",
        "aws_appsync_key": r"\b(da2-[a-z0-9]{26})\b",
        "alibaba_access_key_id": r"\b(LTAI[0-9A-Za-z]{12,20})\b",
        "github_token": r"\b((?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,})\b",
        "github_fine_grained_token": r"\b(github_pat_[0-9A-Za-z_]{60,})\b",
        "gitlab_token": r"\b(gl(?:pat|dt|rtr|rt|ptt|ft|imt|agent|oas|soat|cbt|ffct)-[0-9A-Za-z_\-]{20,})",
        "slack_token": r"\b((?:xox[a-z]|xapp)-[0-9A-Za-z\-]{10,})",
        "slack_webhook": (
            r"((?:https?://)?hooks\.slack\.com/(?:services/T[0-9A-Z]{8,16}/B[0-9A-Z]{8,16}/[0-9A-Za-z_]{24}"
            r"(?![0-9A-Za-z_])|workflows/[A-Za-z0-9+/_\-]{20,}))"
        ),
        "discord_webhook": r"(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w\-]{40,})",
        "stripe_key": r"\b((?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,})\b",
        "openai_key": r"\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}(?:T3BlbkFJ|9wZW5BS|PcGVuQU)[A-Za-z0-9_\-]{16,})",
        "anthropic_key": r"\b(sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{64,})",
        "groq_key": r"\b(gsk_(?:[A-Za-z0-9]{48,}|[A-Za-z0-9_\-]{8,40}(?:WGdyb3FY|hncm9xW|YZ3JvcV)[A-Za-z0-9_\-]{8,40}))\b",
        "deepseek_key": r"\b(sk-[a-f0-9]{32,64})\b",
        "perplexity_key": r"\b(pplx-[A-Za-z0-9_\-]{40,})",
        "xai_key": r"\b(xai-[A-Za-z0-9_\-]{70,})",
        "tavily_key": r"\b(tvly-(?:dev-|prod-)?[A-Za-z0-9]{20,})\b",
        "together_key": r"\b(tgp_v1_[A-Za-z0-9_\-]{40,})",
        "llama_key": r"\b(LLM\|[0-9]{10,}\|[A-Za-z0-9_\-]{20,}|llx-[A-Za-z0-9_\-]{48})",
        "huggingface_token": r"\b(hf_[A-Za-z0-9]{34,})\b",
        "google_api_key": r"\b(AIza[0-9A-Za-z_\-]{35})",
        "google_oauth_secret": r"\b(GOCSPX-[0-9A-Za-z_\-]{28})",
        "google_oauth_access_token": r"\b(ya29\.[0-9A-Za-z_\-]{22,})",
        "google_oauth_refresh_token": r"\b(1//0[0-9A-Za-z_\-]{30,})",
        "npm_token": r"\b(npm_[A-Za-z0-9_\-]{36,})",
        "pypi_token": r"\b(pypi-(?:AgE[A-Za-z0-9_\-]{50,}|[A-Za-z0-9_\-]{150,}))",
        "rubygems_key": r"\b(rubygems_[a-f0-9]{48})\b",
        "nuget_key": r"\b(oy2[a-z0-9]{43})\b",
        "clojars_token": r"\b(CLOJARS_[a-z0-9]{60})\b",
        "sendgrid_key": r"\b(SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})",
        "mailgun_key": r"\b(key-[0-9a-z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})\b",
        "mailchimp_key": r"(?<![A-Za-z0-9_\-])([0-9a-zA-Z_\-]{32}-us\d{1,2})\b",
        "brevo_key": r"\b(xkeysib-[a-f0-9]{64}-[A-Za-z0-9_\-]{16})(?![A-Za-z0-9_\-])",
        "twilio_key": (  # a SID's 32 hex digits are in one case
            r"\b((?:AC|AD|AL|CA|CF|CL|CN|CR|FW|IP|KS|MM|NO|PK|PN|QU|RE|SC|SD|SK|SM|TR|UT|XE|XR)"
            r"(?:[0-9a-f]{32}|[0-9A-F]{32}))\b"
        ),
        "telegram_bot_token": r"\b(\d{8,10}:AA[0-9A-Za-z_\-]{33})",
        "discord_bot_token": r"\b([MNO][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,40})(?![A-Za-z\d_\-])",
        "square_token": r"\b(EAAA[0-9A-Za-z_\-]{60}|sq0[a-z]{3}-[0-9A-Za-z_\-]{22}(?:[0-9A-Za-z_\-]{21})?)(?![0-9A-Za-z_\-])",
        "shopify_token": r"\b(shp(?:at|ca|pa|ss|tka)_[a-fA-F0-9]{32})\b",
        "facebook_token": r"\b(EAA[A-Za-z0-9]{30,})",
        "instagram_token": r"\b(IGQV[A-Za-z0-9_\-]{100,})",
        "digitalocean_token": r"\b(do[opr]_v1_[a-f0-9]{64})\b",
        "databricks_token": r"\b(dapi[a-f0-9]{32}(?:-\d)?)\b",
        "doppler_token": r"\b(dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44})",
        "dropbox_token": r"\b(sl\.(?:u\.)?[A-Za-z0-9_\-]{77,})",
        "dynatrace_token": r"\b(dt0[a-zA-Z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64})\b",
        "figma_token": r"\b(fig[dup]_[A-Za-z0-9_\-]{40,})",
        "grafana_token": r"\b((?:glc_|glsa_|eyJrIjoi)[A-Za-z0-9+/=_\-]{30,})",
        "hashicorp_tf_token": r"(?<![A-Za-z0-9_\-])([A-Za-z0-9_\-]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,})",
        "vault_token": r"\b(hv[sbr]\.[A-Za-z0-9_\-]{24,})",
        "jfrog_token": r"\b((?:AKCp[0-9A-Za-z]{60,}|cmVmd[A-Za-z0-9_\-]{59}))",
        "linear_key": r"\b(lin_api_[A-Za-z0-9]{40})\b",
        "netlify_token": r"\b(nfp_[A-Za-z0-9]{36,})",
        "notion_token": r"\b(secret_[A-Za-z0-9]{43,46}|ntn_\d{9}[A-Za-z0-9_\-]{36,})(?![A-Za-z0-9_\-])",
        "postman_key": r"\b(PMAK-[a-f0-9]{24}-[a-f0-9]{34}|PMAT-[0-9A-Z]{26})\b",
        "posthog_key": r"\b(ph[cxr]_[A-Za-z0-9]{39,})\b",
        "planetscale_token": r"\b(pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-=.]{32,64})",
        "sentry_token": r"\b(sntr[a-z]{1,2}_[A-Za-z0-9_=+/\-]{40,})",
        "sonarqube_token": r"\b(sq[pua]_[a-f0-9]{40})\b",
        "supabase_key": r"\b(sb(?:p|_secret)_[a-f0-9A-Za-z_\-]{40,})",
        "vercel_token": r"\b(vc[pkiar]_[A-Za-z0-9]{56,})",
        "atlassian_token": r"\b(ATATT3[A-Za-z0-9_\-=]{90,}|ATCTT3[A-Za-z0-9_\-=]{90,})",
        "bitbucket_token": r"\b(ATBB[A-Za-z0-9_\-=]{28,})",
        "newrelic_key": r"\b(NR(?:AK|AA|II|JS|RA|SP|BR)-[A-Za-z0-9_\-]{19,32})(?![A-Za-z0-9_\-])",
        "cloudflare_token": r"\b(v1\.0-[a-f0-9]{24}-[a-f0-9]{146})\b",
        "age_secret_key": r"\b(AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})\b",
        "onepassword_token": r"\b(ops_eyJ[A-Za-z0-9+/=_\-]{50,})",
        "docker_token": r"\b(dckr_pat_[A-Za-z0-9_\-]{27,})",
        "docker_swarm_token": r"\b(SWMTKN-1-[a-z0-9]{50}-[a-z0-9]{25})\b",
        "docker_swarm_key": r"\b(SWMKEY-1-[A-Za-z0-9+/]{43})",
        "nkey_seed": r"\b(S[UNOACPX][A-Z2-7]{40,200})\b",
        "braintree_token": r"\b(access_token\$production\$[a-z0-9]{16}\$[a-z0-9]{32})\b",
        "picatic_key": r"\b(sk_live_[a-z0-9]{32})\b",
        "wundergraph_key": r"\b(cosmo_[A-Za-z0-9]{32,})",
        "defined_networking_key": r"\b(dnkey-[A-Za-z0-9=_\-]{26}-[A-Za-z0-9=_\-]{52})",
        "jwt": r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-=]{10,}\.[A-Za-z0-9_\-=]{10,})",
        # a JWS/JWE in other layouts: accepted when its first segment decodes to a JOSE header (alg/enc)
        "jose_token": r"\b(eyJ[A-Za-z0-9_\-=]{13,}\.[A-Za-z0-9_\-=+/.]{10,})",
        "gitlab_runner_token": r"\b(GR1348941[A-Za-z0-9_\-]{20})\b",
        "azure_storage_key": r"(AccountKey=[" + _B64 + r"]{86}==)",
        "azure_secret_value": r"\b([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34})",
        # the header with a body after it (within 80 characters: escaped newlines, quotes, string joins, log
        # prefixes between): a header alone is a constant in code that reads keys, not a key
        "private_key": (
            r"(-----BEGIN (?!ENCRYPTED)(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)(?=[\s\S]{0,80}?[A-Za-z0-9+/]{32})"
        ),
        "stripe_webhook_secret": r"\b(whsec_[A-Za-z0-9]{32,})\b",
        "posthog_personal_key": r"\b(pha_[A-Za-z0-9]{40,})\b",
        "gitlab_workspace_token": r"\b(glwt-[A-Za-z0-9_\-]{20,})",
        "google_oauth_client_id": r"\b(\d{3,80}-[a-z0-9_]{32}\.apps\.googleusercontent\.com)",
        "cloudflare_account_token": r"\b(cf(?:at|ut|k)_[A-Za-z0-9]{40,})\b",
        "newrelic_license_key": r"\b([a-z0-9]{36}NRAL|NRJS-[a-f0-9]{19})\b",
        "posthog_secret_key": r"\b(phs_[A-Za-z0-9]{40,})\b",
        "docker_oat_token": r"\b(dckr_oat_[A-Za-z0-9_\-]{27,})",
        "facebook_app_token": r"\b(\d{12,18}\|[A-Za-z0-9_\-]{24,28})(?![A-Za-z0-9_+\-])",
        "bitbucket_dc_token": r"\b(BBDC-[A-Za-z0-9+/=_\-]{40,})",
        "dropbox_long_term_token": r"\b([A-Za-z0-9]{11}A{10}[A-Za-z0-9_\-]{43})\b",
        "salesforce_client_id": r"\b(3MVG[A-Za-z0-9._]{24,})",
        "aws_bedrock_short_key": r"\b(bedrock-api-key-[A-Za-z0-9+/=]{20,})",
        "gitlab_session_cookie": r"_gitlab_session=([a-f0-9]{32})\b",
        "x_bearer_token": r"\b(A{20,22}[A-Za-z0-9%]{30,})",
        "salesforce_token": r"\b(00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{20,})",
        # base64 of "-----BEGIN ... PRIVATE KEY-" at any of the three byte alignments, also inside a longer blob
        "base64_private_key": (
            r"(LS0t(?:LS1CRUdJTi|LUJFR0lOI|QkVHSU4g)[A-Za-z0-9+/]{0,11}"
            r"(?:UFJJVkFURSBLRVkt|QUklWQVRFIEtFWS0t|FBSSVZBVEUgS0VZ)[A-Za-z0-9+/=]*)"
        ),
        "akamai_client_token": r"\b(akab-[a-z0-9]{16}-[a-z0-9]{16})\b(?!\.\w)",  # not a host name
        "ntlm_token": r"\b(TlRMTVNTUAAD[A-Za-z0-9+/]{20,}={0,2})",
        # Jira / Confluence PAT: base64 of a 12-digit id and ':' (token_structure.atlassian_pat_ok decodes it)
        "atlassian_pat": r"\b([MNO][A-Za-z0-9+/]{42}[A-Za-z0-9])\b",
        "salesforce_org_id": r"\b(00D[A-Za-z0-9]{12,15})\b",
        "heroku_token": r"\b(HRKU-(?:[A-Za-z0-9_\-]{60}|[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}))",
        "github_app_installation_token": r"\b(ghs_\d{1,20}_eyJ[A-Za-z0-9_\-]{15,}(?:\.[A-Za-z0-9_\-]*){2,8})",
        "azure_storage_account_key": r"\b([A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9]{26}(?:[A-Za-z0-9=]{4})?)(?![A-Za-z0-9_/+\-])",
        # Azure Service Bus / Event Hubs shared access keys and SAS signatures in URLs
        "azure_shared_access_key": r"SharedAccessKey=([A-Za-z0-9+/]{43}=)",
        "azure_sas_signature": r"[?&]sig=([A-Za-z0-9%+/]{40,}(?:%3[Dd]|=)*)",
        # a DER private key in base64 (PKCS#1 / PKCS#8): token_structure.der_private_key_ok reads the ASN.1 header
        "base64_der_private_key": r"(?<![A-Za-z0-9+/])(MII[A-Za-f][A-Za-z0-9+/]{8}[A-Za-z0-9+/=]{8,})",
        "grafana_provisioned_key": r"\b(eyJ[A-Za-z0-9=_\-]{60,360})(?![A-Za-z0-9=_\-.])",
        "wechat_app_id": r"\b(wx[0-9a-f]{16})\b",
        # Dropbox app secret shape (CredSweeper's weak base36 rule): 15 lower-case letters and digits alone
        "base36_app_secret": r"(?<![0-9A-Za-z_+\-\\])([a-z0-9]{15})(?![=0-9A-Za-z_/+\-])",
        # prefixed keys from public rule catalogues (gitleaks and others)
        "mapbox_secret_token": r"\b(sk\.eyJ[A-Za-z0-9_\-]{30,}\.[A-Za-z0-9_\-]{20,})",
        "pulumi_token": r"\b(pul-[a-f0-9]{40})\b",
        "prefect_key": r"\b(pnu_[A-Za-z0-9]{36})\b",
        "readme_key": r"\b(rdme_[a-z0-9]{70})\b",
        "typeform_token": r"\b(tfp_[A-Za-z0-9_\-.=]{59,})",
        "shippo_token": r"\b(shippo_(?:live|test)_[a-f0-9]{40})\b",
        "duffel_token": r"\b(duffel_(?:test|live)_[A-Za-z0-9_\-=]{43})",
        "easypost_key": r"\b(EZ[AT]K[A-Za-z0-9]{54})\b",
        "flutterwave_key": r"\b(FLW(?:SECK|PUBK)_TEST-[a-h0-9]{32}-X|FLWSECK-[a-h0-9]{32}-X)\b",
        "frameio_token": r"\b(fio-u-[A-Za-z0-9_\-=]{64})",
        "hubspot_token": r"\b(pat-(?:na|eu)1-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b",
        "flyio_token": r"\b(fo1_[A-Za-z0-9_\-]{43})",
        "infracost_key": r"\b(ico-[A-Za-z0-9]{32})\b",
        "langsmith_key": r"\b(lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10})\b",
        "replicate_token": r"\b(r8_[A-Za-z0-9]{37})\b",
        "openrouter_key": r"\b(sk-or-v1-[a-f0-9]{64})\b",
        "nvidia_key": r"\b(nvapi-[A-Za-z0-9_\-]{64})",
        "yandex_token": r"\b(t1\.[A-Z0-9a-z_\-]+=*\.[A-Z0-9a-z_\-]{86}=*|AQVN[A-Za-z0-9_\-]{35,38})(?![A-Za-z0-9_\-])",
        "adobe_client_secret": r"\b(p8e-[A-Za-z0-9]{32})\b",
        "airtable_pat": r"\b(pat[A-Za-z0-9]{14}\.[a-f0-9]{64})\b",
        "lob_key": r"\b((?:live|test)_[a-f0-9]{35})\b",
        "contentful_token": r"\b(CFPAT-[A-Za-z0-9_\-=]{43})",
        "datadog_app_key": r"\b(ddapp_[A-Za-z0-9]{40,})\b",
        "circleci_token": r"\b(CCIPAT_[0-9A-Za-z]{22}_[0-9a-f]{40})\b",
        # Composio (ak_, oak_, uak_, ck_): a short prefix, so kept only when random (CredSweeper's weak rule)
        "composio_key": r"(?<![0-9A-Za-z+/_\-])((?:[ou]?a|c)k_[0-9A-Za-z_\-]{16,80})(?![0-9A-Za-z+/_\-])",
        "harness_token": r"\b((?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[a-z0-9]{24}\.[A-Za-z0-9]{20})\b",
        "stackhawk_key": r"\b(hawk\.[A-Za-z0-9_\-]{20}\.[A-Za-z0-9_\-]{20})\b",
        # UUIDs serve as API keys (Heroku, Azure, many SaaS); a lower score: masked, not blocked alone
        "uuid": r"\b([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b",
        # a private JSON Web Key: the "kty" member of an object that has "d" (private) or "k" (symmetric)
        "json_web_key": r'("kty"\s*:\s*"[^"]*")(?=[^{}]*"[dk]"\s*:\s*"[A-Za-z0-9_\-]{8,})',
        "base64_json_web_key": r"\b((?:ewog|ewoi|ew0K|eyJ|eyAi|Wwog|Wwp7|Ww0K|WyJ|W3s)[A-Za-z0-9+/]{60,}={0,2})",
        # an OTP / 2FA seed: a bare base32 string of 16 or 32 characters (validators.otp_seed_ok)
        "otp_secret": r"(?<![A-Za-z0-9_/+\-])([A-Z2-7]{16}|[A-Z2-7]{32})(?![A-Za-z0-9_/+=\-])",
        # storage endpoints name data that can be pulled: lower score, masked
        "aws_s3_bucket": r"\b([a-z0-9.\-]+\.s3(?:[.\-][a-z0-9\-]+)?\.amazonaws\.com)",
        "firebase_domain": r"\b([a-z0-9.\-]+\.firebase(?:io|app)\.com)",
        "url_credentials": r"\b[a-z][a-z0-9+.\-]{1,20}://(?:[^\s:/'\"]{0,64}:)?[^\s:/'\"]{0,64}:([^\s:@/'\"]{3,64})@[\w.\-]+",
        # token_structure.basic_auth_ok decodes user:password
        "basic_auth_header": r"\b(?i:basic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        "bearer_auth_header": r"\b(?i:bearer)\s+([A-Za-z0-9_\-.~+/]{20,}=*)",
    }.items()
}
