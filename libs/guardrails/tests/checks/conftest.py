"""Shared fixtures of the content-check tests: a real local HTTP service whose replies a test scripts."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes
    delay_s: float = 0.0


@dataclass
class ScriptedService:
    """A real HTTP server on 127.0.0.1. ``replies`` are consumed in order, then ``default`` answers."""

    Reply: ClassVar[type[Reply]] = Reply
    url: str = ""
    default: Reply = field(default_factory=lambda: Reply(body=[{"label": "non-toxic", "score": 0.99}]))
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    handler: Any = None  # optional callable(request_json) -> Reply

    def next_reply(self, payload: dict[str, Any]) -> Reply:
        if self.replies:
            return self.replies.popleft()
        if self.handler is not None:
            reply: Reply = self.handler(payload)
            return reply
        return self.default


@pytest.fixture
def scripted_service() -> Iterator[ScriptedService]:
    service = ScriptedService()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = json.loads(raw or b"{}")
            service.requests.append(payload)
            service.headers.append(dict(self.headers))
            reply = service.next_reply(payload)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield service
    server.shutdown()
    server.server_close()


SECRET_WORDS = ("zebra", "quokka")


@pytest.fixture(scope="session")
def tiny_ner_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny BERT token classifier (hidden 32, 2 layers) and a WordPiece tokenizer trained here.

    Weights are set so the model is deterministic: attention and feed-forward outputs are zeroed (each layer
    passes its input through), so a token's hidden state is its (normalised) word embedding; the words in
    SECRET_WORDS get an embedding the classifier maps to B-SECRET, every other token maps to O.
    """
    torch = pytest.importorskip("torch", reason="needs the 'ml' extra")
    transformers = pytest.importorskip("transformers", reason="needs the 'ml' extra")
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    corpus = [
        "the quick brown fox jumps over the lazy dog and my code is zebra",
        "a quokka is a small animal; the report lists names, numbers and places",
        "please send the file to the team before noon on friday",
    ] * 20
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    fast = transformers.BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )
    hidden = 32
    config = transformers.BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        id2label={0: "O", 1: "B-SECRET", 2: "I-SECRET"},
        label2id={"O": 0, "B-SECRET": 1, "I-SECRET": 2},
    )
    model = transformers.BertForTokenClassification(config)
    secret_ids = {i for w in SECRET_WORDS for i in fast(w, add_special_tokens=False)["input_ids"]}
    alt = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(hidden)])  # mean 0, std 1: "secret"
    half = torch.tensor([1.0 if i < hidden // 2 else -1.0 for i in range(hidden)])  # orthogonal: "other"
    with torch.no_grad():
        emb = model.bert.embeddings
        emb.position_embeddings.weight.zero_()
        emb.token_type_embeddings.weight.zero_()
        for i in range(config.vocab_size):
            emb.word_embeddings.weight[i] = alt if i in secret_ids else half
        for layer in model.bert.encoder.layer:
            layer.attention.output.dense.weight.zero_()
            layer.attention.output.dense.bias.zero_()
            layer.output.dense.weight.zero_()
            layer.output.dense.bias.zero_()
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.weight[0] = half
        model.classifier.weight[1] = alt
    out = tmp_path_factory.mktemp("tiny-ner")
    model.save_pretrained(out)
    fast.save_pretrained(out)
    return str(out)
