"""Shared hypothesis strategies."""

from __future__ import annotations

from hypothesis import strategies as st

WORDS = [
    "cat",
    "dog",
    "Stock",
    "market",
    "fell",
    "rose",
    "Dr.",
    "e.g.",
    "U.S.",
    "3.14",
    "“Hi.”",
    "(see",
    "above.)",
    "你好。",
    "再见！",
    "नमस्ते।",
    "...",
    "?",
    "!",
    "\n",
    "\n\n",
    "- item",
    "1.",
    "\x00",
    "\t",
    "  ",
    "ﬁ",
    "İstanbul",
    "é",
    "👍",
    "#",
    "# Title\n",
]

sentence_like = st.lists(st.sampled_from(WORDS), max_size=60).map(" ".join)
any_text = st.one_of(
    st.text(max_size=400),
    sentence_like,
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
    st.just(""),
    st.text(alphabet=" \n\t\r", max_size=20),
)
