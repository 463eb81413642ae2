"""The documented test vectors (README "Agent trust"): another implementation must produce the same bytes."""

import hashlib
import hmac

import pytest

from stockade.guardrails.trust import AttestationEnvelope, AttestationVerifier, KeyRing, canonical_json
from stockade.guardrails.trust.envelope import signed_fields

VECTOR_KEY = b"0123456789abcdef0123456789abcdef"
VECTOR_PAYLOAD = b'{"task":"summarize","doc":"q3.pdf"}'
VECTOR_CANONICAL = (
    b'{"capability":"summarize","key_id":"k-2026-11","nonce":"000102030405060708090a0b0c0d0e0f",'
    b'"payload_sha256":"d1b1709a7db987dfd2bdb17d224bf940f32efc7ff7329bb4874babf62a9ad5d4",'
    b'"receiver":"executor","sender":"planner","timestamp_ms":1795000000000,"v":1}'
)
# Computed independently with: printf '%s' '<canonical>' | openssl dgst -sha256 -hmac <key>
VECTOR_SIGNATURE = "b6a580d66fd95582e7c7730feea3b7321a5c5fa09b919f5bc0a71f529277871a"


def test_vector_canonical_bytes_and_signature():
    fields = signed_fields(
        sender="planner",
        receiver="executor",
        key_id="k-2026-11",
        payload_sha256=hashlib.sha256(VECTOR_PAYLOAD).hexdigest(),
        nonce="000102030405060708090a0b0c0d0e0f",
        timestamp_ms=1795000000000,
        capability="summarize",
    )
    assert canonical_json(fields) == VECTOR_CANONICAL
    assert hmac.new(VECTOR_KEY, VECTOR_CANONICAL, hashlib.sha256).hexdigest() == VECTOR_SIGNATURE


async def test_vector_envelope_verifies_and_field_order_in_transport_does_not_matter():
    # The envelope's JSON on the wire may have any member order and extra members; the MAC is over canonical bytes.
    wire = (
        '{"signature":"SIG","v":1,"timestamp_ms":1795000000000,"sender":"planner","receiver":"executor",'
        '"nonce":"000102030405060708090a0b0c0d0e0f","key_id":"k-2026-11","capability":"summarize",'
        '"payload_sha256":"d1b1709a7db987dfd2bdb17d224bf940f32efc7ff7329bb4874babf62a9ad5d4","trace":"x"}'
    ).replace("SIG", VECTOR_SIGNATURE)
    envelope = AttestationEnvelope.parse(wire)
    assert envelope is not None and envelope.signing_input() == VECTOR_CANONICAL
    verifier = AttestationVerifier(
        KeyRing({"planner": {"k-2026-11": VECTOR_KEY}}), clock=lambda: 1_795_000_001.0
    )
    result = await verifier.verify(envelope, VECTOR_PAYLOAD)
    assert result.passed, result.error


def test_null_capability_vector():
    fields = signed_fields(
        sender="a",
        receiver="b",
        key_id="k",
        payload_sha256="0" * 64,
        nonce="f" * 32,
        timestamp_ms=0,
        capability=None,
    )
    assert canonical_json(fields) == (
        b'{"capability":null,"key_id":"k","nonce":"ffffffffffffffffffffffffffffffff",'
        b'"payload_sha256":"' + b"0" * 64 + b'","receiver":"b","sender":"a","timestamp_ms":0,"v":1}'
    )


def test_canonical_string_escapes_follow_rfc8785():
    encoded = canonical_json({"b": 'é\n\t\u0001"\\\u007f\u2028', "a": None, "c": -5})
    assert encoded == '{"a":null,"b":"é\\n\\t\\u0001\\"\\\\\u007f\u2028","c":-5}'.encode()


@pytest.mark.parametrize("value", [1.5, True, [1], {"x": 1}, 2**53])
def test_canonical_refuses_values_outside_the_signed_subset(value):
    with pytest.raises((TypeError, ValueError)):
        canonical_json({"x": value})


def test_canonical_matches_a_reference_jcs_encoding_on_awkward_strings():
    import json
    import random

    rng = random.Random(8785)
    alphabet = [chr(c) for c in range(0x00, 0x80)] + ["é", "ß", "€", "\u2028", "\u2029", "😀", "\ufeff"]
    for _ in range(300):
        fields = {
            f"k{rng.randrange(20)}": "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
            for _ in range(rng.randrange(1, 6))
        }
        fields["n"] = rng.randrange(-(2**53) + 1, 2**53)
        fields["z"] = None
        reference = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert canonical_json(fields) == reference


@pytest.mark.parametrize(
    "capability",
    [None, "", "summarize", 'q"uo\\te', "tab\there\nnl\x00\x1f", "é漢字🙂", "\u2028\u2029", "x" * 200],
)
@pytest.mark.parametrize("timestamp_ms", [0, 1795000000000, 2**53 - 1])
def test_envelope_signing_input_is_the_generic_canonical_encoding(capability, timestamp_ms):
    """The verification fast path builds the signed bytes directly; they must equal canonical_json's."""
    envelope = AttestationEnvelope(
        sender="planner",
        receiver="exec_2-b",
        key_id="k:2026.11-a_b",
        payload_sha256="ab" * 32,
        nonce="0f" * 16,
        timestamp_ms=timestamp_ms,
        capability=capability,
        signature="00" * 32,
    )
    assert envelope.signing_input() == canonical_json(envelope.signed_fields())
