"""What the LLM judge is asked for each metric.

Every prompt asks for the intermediate verdicts (statements, claims, needs, facts) as
JSON and never for the score itself: the score is computed from the verdicts in
:mod:`pytest_evals.families.rag.scoring`, so it is reproducible from what the report shows.
Placeholders are ``str.format`` fields; literal braces in the JSON shapes are doubled.
"""

from __future__ import annotations

#: GOV.UK Chat's judge persona: the default of GOV.UK-shaped suites only (other suites get
#: a neutral one or their own ``judge:`` wording, :mod:`.judge_block`).
JUDGE_SYSTEM = (
    "You are a meticulous evaluator of answers given by a public-service assistant that "
    "answers questions about government services from retrieved web pages. You follow the "
    "instructions exactly and reply with a single JSON object, without markdown fences or "
    "any text outside the JSON."
)

RELEVANCE_PROMPT = """\
Judge how relevant the ANSWER is to the QUESTION.

1. Split the answer into short, self-contained statements: one fact, step, condition or
   suggestion each, keeping the answer's meaning. Leave out greetings, headings and
   sign-offs that say nothing.
2. Give each statement a verdict:
   - "yes": it helps answer the question (directly, or as information the person needs
     to act on it);
   - "no": it is about something the question does not ask;
   - "idk": it is secondary (a caveat, a pointer to more help) and neither clearly on nor
     off the question.
3. Sum up in one or two sentences how well the answer stays on the question.

Reply with exactly this JSON shape:
{{"statements": [{{"statement": "...", "verdict": "yes", "reason": "..."}}], "reason": "..."}}

QUESTION:
{question}

ANSWER:
{answer}
"""

FAITHFULNESS_PROMPT = """\
Judge whether the ANSWER is faithful to the CONTEXT it was written from.

1. List the facts the context states that bear on the answer ("truths").
2. Split the answer into individual factual claims (amounts, dates, conditions,
   eligibility, steps, names, links). Leave out greetings and offers of further help.
3. Give each claim a verdict against the context:
   - "yes": the context supports it;
   - "no": the context contradicts it (a different amount, date, condition or outcome);
   - "idk": the context says nothing either way.
4. Sum up in one or two sentences whether the answer sticks to the context.

Reply with exactly this JSON shape:
{{"truths": ["..."], "claims": [{{"claim": "...", "verdict": "yes", "reason": "..."}}], "reason": "..."}}

QUESTION (for reference):
{question}

CONTEXT:
{context}

ANSWER:
{answer}
"""

CONTEXT_RELEVANCY_PROMPT = """\
Judge whether the retrieved CONTEXT gives what is needed to answer the QUESTION.

1. List the distinct pieces of information someone would need to answer the question
   fully ("needs"). A simple question may have one need; a compound one several.
2. For each need, decide whether the context meets it:
   - "yes": the context provides it;
   - "no": the context does not provide it;
   - "idk": the context touches on it but it is unclear whether it is enough.
3. Sum up in one or two sentences how well the context covers the question.

Reply with exactly this JSON shape:
{{"needs": [{{"need": "...", "verdict": "yes", "reason": "..."}}], "reason": "..."}}

QUESTION:
{question}

CONTEXT:
{context}
"""

COHERENCE_PROMPT = """\
Rate the coherence of the ANSWER to the QUESTION on a scale of 1 to 5.

5 - well organised: ideas follow in a logical order, each sentence builds on the
    previous ones, no contradictions, easy to follow from start to finish.
4 - mostly well organised, with a minor jump, repetition or awkward ordering.
3 - understandable, but the order is loose or parts feel disconnected or repetitive.
2 - hard to follow: ideas are jumbled, abrupt topic changes, or internal contradictions.
1 - incoherent: no discernible structure or the parts do not make sense together.

Judge the structure and flow only, not whether the facts are correct. Give your reason
first, then the score as a whole number.

Reply with exactly this JSON shape:
{{"reason": "...", "score": 4}}

QUESTION:
{question}

ANSWER:
{answer}
"""

FACTUAL_PROMPT = """\
Compare the key facts of the ANSWER with the IDEAL ANSWER to the QUESTION.

Key facts are the pieces of information that matter to the person asking: amounts,
dates, deadlines, eligibility conditions, steps, organisations, contact routes. Ignore
differences of wording, order, greetings and offers of further help. Classify:
   - "TP": a key fact in the answer that the ideal answer also states;
   - "FP": a key fact in the answer that the ideal answer does not state, or contradicts;
   - "FN": a key fact in the ideal answer that the answer leaves out or gets wrong.
Write each fact as a short sentence. Then sum up the comparison in one or two sentences.

Reply with exactly this JSON shape:
{{"TP": ["..."], "FP": ["..."], "FN": ["..."], "reason": "..."}}

QUESTION:
{question}

IDEAL ANSWER:
{ideal_answer}

ANSWER:
{answer}
"""

BIAS_PROMPT = """\
Judge whether the ANSWER to the QUESTION expresses bias.

1. List the opinions the answer expresses: judgements, recommendations or views that
   are not plain statements of fact or of what the rules say. Facts, steps and quoted
   eligibility rules are not opinions. An answer with no opinions gives an empty list.
2. Give each opinion a verdict:
   - "yes": it is biased: it favours or disparages a group (by gender, race, religion,
     nationality, age, disability...), a political party or view, or presents one side
     of a contested matter as settled;
   - "no": it is balanced or neutral.
3. Sum up in one or two sentences whether the answer is impartial.

Reply with exactly this JSON shape:
{{"opinions": [{{"opinion": "...", "verdict": "no", "reason": "..."}}], "reason": "..."}}

QUESTION:
{question}

ANSWER:
{answer}
"""

CONTRADICTIONS_PROMPT = """\
Check whether the ANSWER contradicts the IDEAL ANSWER to the QUESTION.

1. List the facts the ideal answer states ("truths").
2. Split the answer into individual factual claims (amounts, dates, conditions,
   eligibility, steps, names). Leave out greetings and offers of further help.
3. Give each claim a verdict against the truths:
   - "no": it contradicts a truth (a different amount, date, condition or outcome);
   - "yes": it agrees with the truths;
   - "idk": the truths say nothing about it (not a contradiction).
4. Sum up in one or two sentences any contradictions found.

Reply with exactly this JSON shape:
{{"truths": ["..."], "claims": [{{"claim": "...", "verdict": "yes", "reason": "..."}}], "reason": "..."}}

QUESTION:
{question}

IDEAL ANSWER:
{ideal_answer}

ANSWER:
{answer}
"""

#: metric -> prompt template. The factual metrics share one judgement.
PROMPTS: dict[str, str] = {
    "relevance": RELEVANCE_PROMPT,
    "faithfulness": FAITHFULNESS_PROMPT,
    "context_relevancy": CONTEXT_RELEVANCY_PROMPT,
    "coherence": COHERENCE_PROMPT,
    "factual_correctness": FACTUAL_PROMPT,
    "factual_precision": FACTUAL_PROMPT,
    "factual_recall": FACTUAL_PROMPT,
    "absence_of_factual_contradictions": CONTRADICTIONS_PROMPT,
    "bias": BIAS_PROMPT,
}


def judge_messages(metric: str, system: str = JUDGE_SYSTEM, **fields: str) -> list[dict[str, str]]:
    """The chat messages sent to the judge for ``metric`` (``system``: the judge's persona,
    criteria and examples, :meth:`.judge_block.ResolvedJudge.system_message`)."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": PROMPTS[metric].format(**fields)},
    ]
