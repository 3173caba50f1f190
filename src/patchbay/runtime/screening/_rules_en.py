"""English phrase-rule patterns (see :mod:`patchbay.runtime.screening._phrases` for the rules and
the precision trade-offs). ``EN`` is a list of :class:`Group`; each group names the words a match
can start with (its heads)."""

from __future__ import annotations

import re

from patchbay.runtime.screening._groups import CLAUSE_START, Group, alt, first_words

__all__ = ["EN"]

# --- English building blocks ----------------------------------------------------------------------

_QUALS = (
    "previous",
    "prior",
    "preceding",
    "above",
    "earlier",
    "original",
    "initial",
    "former",
    "foregoing",
    "old",
    "system",
    "developer",
    "existing",
    "hidden",
    "given",
    "current",
    "safety",
    "built-in",
)
_QUAL = alt(*_QUALS)
_MOD = alt(
    "system",
    "safety",
    "developer",
    "operator",
    "content",
    "ethical",
    "moral",
    "core",
    "base",
    "hidden",
    "secret",
    "internal",
    "original",
    "initial",
    "default",
    "programmed",
    "given",
    "existing",
)
_STRONG = alt(
    "instructions?",
    "prompts?",
    "directions",
    "directives?",
    "guidelines",
    "guardrails",
    "programming",
    "system prompts?",
    "system messages?",
    "orders",
    "criteria",
    "guidance",
    "briefing",
    "commands",
)
_STRONG_HEADS = (
    "instruction",
    "instructions",
    "prompt",
    "prompts",
    "directions",
    "directive",
    "directives",
    "guidelines",
    "guardrails",
    "programming",
    "system",
    "orders",
    "criteria",
    "guidance",
    "briefing",
    "commands",
)
_WEAK = alt(
    "rules",
    "restrictions",
    "constraints",
    "limitations",
    "limits",
    "policies",
    "policy",
    "filters",
    "safeguards",
    "protections",
    "training",
    "context",
    "messages",
    "conditioning",
    "alignment",
)
_VERBS = (
    "ignore",
    "disregard",
    "forget",
    "forget about",
    "skip",
    "override",
    "overrule",
    "bypass",
    "discard",
    "abandon",
    "throw out",
    "throw away",
    "set aside",
    "put aside",
    "pay no attention to",
    "pay no heed to",
    "do not follow",
    "don't follow",
    "do not obey",
    "don't obey",
    "stop following",
    "stop obeying",
    "no longer follow",
    "no longer obey",
    "circumvent",
    "neglect",
    "violate",
)
_VERB = alt(*_VERBS)
_STRONG_ONLY_VERBS = ("drop", "scrap", "ditch", "dismiss", "forgo")
_VERB_STRONG = alt(*_VERBS, *_STRONG_ONLY_VERBS)
_DET = r"(?:(?:the|any|every|each|of|these|those|this|that|my|such|and|all|whatever) )*"
_AFTER = r"(?: (?:" + _QUAL + "|" + _MOD + r"|of|the|your|my|all|its|and|\w+-level))*"
_POST = alt(
    r"(?:that )?you(?: were| have been|'ve been| had been| got) (?:given|told|provided|taught|fed)",
    r"(?:that )?you (?:received|got|had|have|were trained on|are following|follow)",
    r"(?:given|provided|sent) (?:to you|earlier|before|previously|above)",
    r"from (?:your|the) (?:developers?|creators?|operators?|system|owners?|admins?|administrators?|makers?|programmers?)",
    r"above",
    r"before this",
    r"so far",
    r"up to now",
    r"until now",
)
_SECRET = alt(
    r"api[ _-]?keys?",
    r"access[ _-]?keys?",
    r"secret[ _-]?keys?",
    r"private[ _-]?keys?",
    r"ssh[ _-]?keys?",
    r"(?:access |auth |authentication |bearer |oauth |session |refresh |api )?tokens?",
    r"session cookies?",
    r"cookies",
    r"passwords?",
    r"passphrases?",
    r"credentials?",
    r"secrets",
    r"environment variables?",
    r"env(?:ironment)? vars?",
    r"\.env\b",
    r"id_rsa",
    r"one-time (?:codes?|passwords?)",
    r"2fa codes?",
    r"seed phrases?",
    r"recovery (?:phrases?|codes?)",
    r"chat history",
    r"conversation history",
    r"(?:last|previous|earlier|recent)(?: \w+)? messages",
    r"(?:system|admin) password",
)
_SECRET_VERBS = (
    "reveal",
    "print",
    "show",
    "display",
    "output",
    "dump",
    "leak",
    "disclose",
    "expose",
    "echo",
    "share",
    "tell me",
    "give me",
    "send",
    "post",
    "upload",
    "email",
    "e-mail",
    "forward",
    "transmit",
    "exfiltrate",
    "paste",
    "include",
    "read out",
    "write out",
    "provide",
    "append",
    "attach",
    "copy",
)
_SECRET_VERB = alt(*_SECRET_VERBS)
_SECRET_HEADS = (
    "api",
    "access",
    "secret",
    "private",
    "ssh",
    "auth",
    "authentication",
    "bearer",
    "oauth",
    "session",
    "refresh",
    "token",
    "tokens",
    "cookies",
    "password",
    "passwords",
    "passphrase",
    "passphrases",
    "credential",
    "credentials",
    "secrets",
    "environment",
    "env",
    ".env",
    "id_rsa",
    "one",
    "2fa",
    "seed",
    "recovery",
    "chat",
    "conversation",
    "last",
    "previous",
    "earlier",
    "recent",
    "system",
    "admin",
)
_SECRET_FILE = alt(
    r"~/\.ssh/\S*",
    r"(?:the |your |my )?\.(?:ssh|aws|gnupg|kube) (?:folder|directory|dir)\b",
    r"\bid_(?:rsa|ed25519|ecdsa)\b",
    r"/etc/(?:passwd|shadow)\b",
    r"(?:~/)?\.aws/credentials",
    r"(?<![\w.])\.env\b(?!\.example|\.sample)",
    r"\.npmrc\b",
    r"\.netrc\b",
    r"\.pgpass\b",
    r"kubeconfig",
    r"\.git-credentials",
    r"credentials\.json",
)
_PROMPT_VERBS = (
    "reveal",
    "print",
    "show",
    "display",
    "output",
    "repeat",
    "recite",
    "dump",
    "leak",
    "disclose",
    "expose",
    "echo",
    "share",
    "tell me",
    "give me",
    "write out",
    "spell out",
    "type out",
    "paste",
    "return",
    "list",
    "provide",
    "send me",
    "copy",
    "summarize",
    "summarise",
    "translate",
)
_PROMPT_VERB = alt(*_PROMPT_VERBS)
_PROMPT_NOUN = alt(
    "system prompt",
    "system message",
    "prompt",
    "instructions",
    "initial instructions",
    "directives",
    "guidelines",
    "rules",
    "configuration",
    "pre-?prompt",
    "hidden instructions",
    "context window",
)
_AI_HEADS = (
    "ai",
    "a",
    "llm",
    "large",
    "language",
    "assistant",
    "chatbot",
    "bot",
    "gpt",
    "chatgpt",
    "claude",
    "gemini",
    "copilot",
    "automated",
    "autonomous",
    "agent",
    "model",
)
_AI = alt(
    "ai",
    "a\\.i\\.",
    "llm",
    "large language model",
    "language model",
    "ai model",
    "ai system",
    "ai assistant",
    "ai agent",
    "assistant",
    "chatbot",
    "bot",
    "gpt",
    "chatgpt",
    "claude",
    "gemini",
    "copilot",
    "automated (?:system|agent|assistant)",
    "autonomous agent",
    "agent",
    "model",
)
_MODE_STRONG = alt(
    "dan",
    "jailbreak",
    "jailbroken",
    "unrestricted",
    "unfiltered",
    "uncensored",
    "evil",
    "unhinged",
    "unlocked",
    "no-limits?",
    "chaos",
)
_MODE_WEAK = alt(
    "developer",
    "dev",
    "admin",
    "administrator",
    "god",
    "sudo",
    "root",
    "superuser",
    "debug",
    "maintenance",
    "privileged",
    "opposite",
)
_NO_LIMITS = alt(
    "rules",
    "restrictions",
    "filters",
    "limits",
    "limitations",
    "guidelines",
    "censorship",
    r"content polic(?:y|ies)",
    "ethics",
    "morals",
    "boundaries",
    "constraints",
    "safeguards",
    "guardrails",
)

EN: list[Group] = [
    Group(
        "instruction_override",
        "en",
        first_words(*_VERBS, *_STRONG_ONLY_VERBS),
        re.compile(
            _VERB_STRONG
            + " "
            + _DET
            + r"(?:your|all|"
            + _QUAL
            + ")"
            + _AFTER
            + " "
            + _STRONG
            + r"\b"
            + "|"
            + _VERB
            + " "
            + _DET
            + r"(?:your|"
            + _QUAL
            + ")"
            + _AFTER
            + " "
            + _WEAK
            + r"\b"
            + "|"
            + _VERB_STRONG
            + " "
            + _DET
            + r"(?:all |your )?"
            + _STRONG
            + " "
            + _POST
            + r"\b"
            + "|"
            + _VERB
            + " "
            + _DET
            + r"(?:all |your )?"
            + _WEAK
            + " "
            + _POST
            + r"\b"
            + "|"
            + _VERB
            + r" (?:everything|all|anything|all of that|all that|whatever) (?:"
            + r"you(?: were| have been|'ve been) (?:told|given|instructed|taught)"
            + r"|above|before|prior|previously|said|written|stated|so far|up to (?:this|now)"
            + r"|(?:that|which) (?:came|was said|was written) (?:before|above|earlier)"
            + r"|(?:i|we) (?:said|told you|wrote) (?:before|earlier|above))\b"
            + "|"
            + _VERB
            + r" (?:the|all the|all of the) (?:above|preceding|foregoing)(?= and\b|,|\.|;|:|$| instructions| text| prompt| context)"
            + "|"
            + _VERB
            + r" (?:the |your |this |that |my )?(?:[\w-]+ )?(?:task|request|question|assignment) (?:and|,) (?:instead|rather)\b"
        ),
        gate="en",
    ),
    Group(
        "instruction_override",
        "en",
        (
            *_QUALS,
            "built",
            "your",
            *_STRONG_HEADS,
            "whatever",
            "everything",
            "anything",
            "all",
            "treat",
            "consider",
            "use",
            "take",
            "you",
            "real",
            "actual",
            "true",
            "hidden",
            "secret",
            "new",
            "updated",
            "additional",
            "important",
            "urgent",
        ),
        re.compile(
            r"you (?:(?:can|will|may|must|should|shall|now|are free to|are allowed to|are permitted to) )*(?:ignore|disregard|bypass|skip|override)"
            + r" (?:(?:all|any|your|the|of) )*(?:content|safety|usage|ethical|moral|ethics)(?: \w+)? (?:polic(?:y|ies)|guidelines|rules|restrictions|filters|checks)\b|"
            r"(?:(?:"
            + _QUAL
            + r"|your) )+(?:(?:"
            + _MOD
            + r") )?"
            + alt(_STRONG, _WEAK, "tasks?")
            + r"(?: (?:you|that you) (?:received|were given|got|have|had)(?: (?:earlier|before|previously))?)?"
            + r" (?:are|were|is|was|have been|has been)(?: (?:all|now|hereby|officially|completely|henceforth))*"
            + r" (?:void|null|cancell?ed|revoked|overridden|overruled|superseded|invalid|invalidated|nullified"
            + r"|irrelevant|suspended|lifted|removed|disabled|deleted|replaced|no longer (?:valid|in effect|relevant|applicable|active))\b"
            + r"|(?:(?:"
            + _QUAL
            + r"|your) )+(?:(?:"
            + _MOD
            + r") )?"
            + _STRONG
            + r"(?: [\w']+){0,4}? (?:must|should|are to|is to|need to|have to) be (?:ignored|disregarded|forgotten|discarded|overridden|dropped)\b"
            + r"|"
            + _STRONG
            + r" (?:you (?:received|were given|got|have been given))(?: (?:earlier|before|previously|so far))?"
            + r" (?:no longer (?:apply|applies|matter|matters|hold|holds|count|counts|stand)|(?:are|is) no longer (?:valid|in effect|relevant|applicable))\b"
            + r"|(?:(?:"
            + _QUAL
            + r"|your) )+"
            + _STRONG
            + r" no longer (?:apply|applies|matter|matters|hold|holds|count|counts|stand)\b"
            + r"|(?:whatever|everything|anything|all) (?:you(?: were| have been|'ve been) (?:told|given|instructed)|(?:i|they|we) told you)"
            + r"(?: [\w']+){0,4}? (?:doesn't|does not|no longer|don't|do not) (?:matter|apply|count)\b"
            + r"|your (?:new|real|actual|true|updated|only) (?:instructions|orders|directives|task|objective|goal|mission|purpose|job|role|system prompt|prompt|programming) (?:is|are|will be)\b"
            + r"|"
            + CLAUSE_START
            + r"(?:real|actual|true|hidden|secret) (?:instructions?|task|orders|directives?) ?:"
            + r"|(?:new|updated|additional|important|urgent) (?:rules?|instructions?|directives?|orders|polic(?:y|ies)) from (?:your|the) (?:operators?|developers?|admins?|administrators?|creators?|owners?|system|company|makers?)\b"
            + r"|(?:treat|consider|use|take) (?:everything|all|the following|what follows|the text|this)(?: [\w']+){0,5}? as your (?:new |real |actual |updated )?(?:system prompt|instructions|programming|orders)\b"
        ),
    ),
    Group(
        "role_switch",
        "en",
        (
            "you",
            "you're",
            "from",
            "starting",
            "henceforth",
            "for",
            "act",
            "behave",
            "respond",
            "answer",
            "roleplay",
            "role",
            "operate",
            "pretend",
            "enable",
            "enter",
            "activate",
            "switch",
            "turn",
            "engage",
            "unlock",
            "initiate",
            "go",
            "do",
            "dan",
            "stay",
            "<|",
            "<<sys>>",
            "[inst]",
            "[/inst]",
            "new",
            "updated",
            "revised",
            "real",
            "system",
            "admin",
            "developer",
            "there",
            "ai",
            "assistant",
            "model",
            "chatbot",
            "llm",
            "bot",
            "ais",
            "assistants",
            "models",
            "chatbots",
            "llms",
            "bots",
        ),
        re.compile(
            r"you(?: are|'re) now (?:in |operating in |running in |an? |my |the |officially )?(?:(?:"
            + _MODE_STRONG
            + "|"
            + _MODE_WEAK
            + r")[ -])+(?:mode|ai|model|assistant|bot|chatbot|version|persona|access)?\b"
            + r"|you(?: are|'re) now (?:an? |the )?(?:"
            + _MODE_STRONG
            + r")\b"
            + r"|you(?: are|'re) (?:now )?(?:in |operating in |running in )(?:"
            + _MODE_STRONG
            + r"|god|admin|administrator|developer|sudo|root|superuser)[ -]mode\b"
            + r"|(?:there are|you have|there is) no (?:more )?(?:content |safety |ethical )?(?:rules|restrictions|filters|limits|guidelines|censorship) (?:here|anymore|any more|now|in this mode|for you)\b"
            + r"|(?:ai|assistant|model|chatbot|llm|bot)s? (?:that|which|who) (?:has been|have been|is|are|was|were) (?:now )?(?:freed|released|liberated|unshackled|free|exempt) (?:from|of)\b"
            + r"|(?:ai|assistant|model|chatbot|llm|bot)s? (?:that|which|who) (?:has|have) no "
            + _NO_LIMITS
            + r"\b"
            + r"|you(?: have been| are| were|'ve been| got| are now) (?:now )?(?:upgraded|promoted|switched|moved|elevated|granted|given|put|placed) (?:to|into|in) (?:the |an? )?(?:"
            + _MODE_STRONG
            + "|"
            + _MODE_WEAK
            + r") (?:mode|access|privileges|rights|level|role)\b"
            + r"|(?:from now on|from this point (?:on|forward|onwards?)|from here on(?: out)?|starting now|henceforth|for the rest of (?:this|the) (?:conversation|session|chat)),? you (?:are|will (?:be|act|behave|respond|answer|pretend|play|only)|shall|must (?:act|behave|respond|answer|pretend|only)|act as|play|'re|have no|no longer)\b"
            + r"|you(?: are|'re)(?: now)? (?:an? |the )?(?:\w+ )?(?:ai|assistant|model|chatbot|llm|bot)(?: \w+)? (?:with no|without(?: any)?) "
            + _NO_LIMITS
            + r"\b"
            + r"|you (?:no longer have|do not have|don't have|have no|are free of|are freed from|are not bound by|are no longer bound by|are released from)(?: any)?(?: \w+)? "
            + _NO_LIMITS
            + r"\b"
            + r"|you\b(?: [\w']+){0,5}? (?:enable|enter|activate|switch (?:in)?to|turn on|engage|unlock|go into|are in|be in) (?:the |your )?(?:"
            + _MODE_WEAK
            + r") mode\b"
            + r"|do anything now|\bdan (?:mode|prompt|jailbreak)\b|stay in character (?:no matter what|at all times|whatever happens)"
            + r"|<\|im_start\|> ?(?:system|developer)|<\|(?:system|developer)\|>|<<sys>>|\[/?inst\]|<\|start_header_id\|> ?system"
            + r"|(?:new|updated|revised|real) system (?:prompt|instructions?) ?:|(?:system|admin|developer) override\b"
        ),
    ),
    Group(
        "role_switch",
        "en",
        (
            "act",
            "behave",
            "respond",
            "answer",
            "roleplay",
            "role",
            "operate",
            "pretend",
            "enable",
            "enter",
            "activate",
            "switch",
            "turn",
            "engage",
            "unlock",
            "initiate",
            "go",
        ),
        re.compile(
            r"(?:act|behave|respond|answer|roleplay|role-play|operate) (?:as|like) (?:an? |the |my )?(?:"
            + _MODE_STRONG
            + r"\b|(?:ai|assistant|model|chatbot|llm|bot)(?: \w+)? (?:with no|without)\b)"
            + r"|pretend (?:to be|you are|you're|that you are|that you're) (?:an? |the )?(?:"
            + _MODE_STRONG
            + r"\b|(?:ai|assistant|model|chatbot|llm|bot)(?: \w+)? (?:with no|without)\b|not (?:an ai|bound|restricted)\b)"
            + r"|(?:enable|enter|activate|switch (?:in)?to|turn on|engage|unlock|initiate|go into) (?:the |your )?(?:"
            + _MODE_STRONG
            + r") mode\b"
        ),
        gate="en",
    ),
    Group(
        "system_prompt_request",
        "en",
        (*first_words(*_PROMPT_VERBS), "repeat"),
        re.compile(
            _PROMPT_VERB
            + r" (?:me |us )?(?:back )?(?:(?:all|the|of|out|full|entire|complete|exact|text|contents?|words|wording|verbatim) )*(?:your|its) (?:[\w-]+ ){0,3}?"
            + _PROMPT_NOUN
            + r"\b"
            + "|"
            + _PROMPT_VERB
            + r" (?:the )?(?:(?:full|entire|complete|exact|verbatim) )*(?:system prompt|system message) (?:to|in|into|with) (?:the |your )?(?:user|reader|chat|reply|response|answer|output|comments?)\b"
            + "|"
            + _PROMPT_VERB
            + r" (?:me |us )?(?:the )?(?:(?:full|entire|complete|exact|verbatim) )*(?:hidden|secret|confidential|initial|original) (?:\w+ )?(?:instructions|system prompt|prompt|directives)\b"
            + r"|repeat (?:everything|all|all (?:the )?text|the (?:text|words|content|lines|messages?|prompt)) (?:\w+ )?(?:above|before (?:this|that)|preceding|prior to (?:this|that))\b"
        ),
        gate="en",
    ),
    Group(
        "system_prompt_request",
        "en",
        ("what",),
        re.compile(
            r"what (?:is|are|was|were) your (?:(?:exact|full|complete|initial|original|hidden|secret|system|current|real|first) )+(?:prompt|instructions|rules|directives|guidelines|message)\b"
            + r"|what (?:is|was) your system prompt\b"
            + r"|what (?:instructions|rules|guidelines|directives|prompts?|system prompt) (?:were|was|have|had|did) you (?:been )?(?:given|told|provided|receive|get|start with)\b"
        ),
    ),
    Group(
        "secret_request",
        "en",
        (
            *first_words(*_SECRET_VERBS),
            "e",
            "what",
            "what's",
            "read",
            "return",
            "give",
            "tell",
            "show",
            "send",
            "cat",
            "list",
        ),
        re.compile(
            _SECRET_VERB
            + r" (?:me |us )?(?:all |any |every |the |of |out )*(?:your|the user's|user's|the users'|their|its|his|her|our) (?:[\w'-]+ ){0,3}?"
            + _SECRET
            + r"\b"
            + "|"
            + _SECRET_VERB
            + r" (?:[\w'-]+ ){0,4}?"
            + _SECRET
            + r"(?: [\w'().-]+){0,6}? (?:to|into|at|via|using) (?:https?://|www\.|[\w.+-]+@[\w-]+\.\w+|(?:this|the following|my|our|an external|a remote|the) (?:url|endpoint|server|address|email|webhook|link)\b)"
            + "|"
            + alt(_SECRET_VERB, "list")
            + r" (?:me |us )?(?:all |any |every |the )*(?:[\w'-]+ ){0,2}?"
            + _SECRET
            + r"(?: (?:that|which))? (?:you (?:have|can|could) (?:access(?: to)?|see|read|find|reach|get)|(?:are )?(?:available|visible|accessible) to you)\b"
            + r"|(?:tell me|give me|send me|show me|what is|what's|reveal) (?:the |your )?(?:\w+ ){0,2}?(?:password|passphrase|api key|secret key|private key|access token|token|credentials|pin)s? (?:of|for|to) (?:the |your )?(?:admin|administrator|root|database|db|production|prod|server|account|system|vault|wallet)\b"
            + r"|(?:read|print|show|output|paste|send|include|dump|display|upload|leak|exfiltrate|email|post|return|give me|reveal|share|copy|attach|forward|provide|list) (?:[\w-]+ ){0,4}?(?:[\w.~-]*/)*"
            + _SECRET_FILE
            + r"|cat (?:~/\.ssh/(?!\S*\.pub\b)\S+|\S*\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)|/etc/shadow\b|(?:~/)?\.aws/credentials|\S*\.git-credentials|\S*\.netrc\b|\S*\.pgpass\b)"
        ),
        gate="en",
    ),
    Group(
        "secret_request",
        "en",
        _SECRET_HEADS,
        re.compile(
            _SECRET
            + r"(?: [\w'-]+){0,5}? (?:stored|saved|kept|configured|available|loaded) (?:in|inside|within) your (?:configuration|config|memory|context|environment|system|settings|prompt|instructions)\b"
        ),
    ),
    Group(
        "ai_directive",
        "en",
        (
            "if",
            "note",
            "message",
            "memo",
            "reminder",
            "notice",
            "attention",
            "directive",
            "hey",
            "dear",
            "hello",
            "hi",
            *_AI_HEADS,
        ),
        re.compile(
            r"if you(?: are|'re) (?:an? |the )?"
            + _AI
            + r"\b(?! (?:researcher|engineer|developer|startup|company|team|student|enthusiast|practitioner|scientist|expert|professional|vendor|provider|user|product|builder|hobbyist|lab|platform|designer|trainer|consultant)s?\b)"
            + r"|(?:note|message|memo|reminder|notice|attention|directive) (?:to|for) (?:the |any |all |every )?"
            + _AI
            + r"s?\b"
            + r"|"
            + CLAUSE_START
            + r"(?:ai|assistant|model|llm|agent|bot|chatbot) (?:instructions?|directives?|task|orders|override|commands?) ?:"
            + r"|(?:(?<![\s\S])|(?<=[.!?:;] ))(?:attention|hey|dear|hello|hi)[ ,]+(?:the |any |all )?"
            + _AI
            + r"s?(?: \w+)?[:,!]"
            + r"|"
            + _AI
            + r"s? (?:that (?:is|are) |who (?:is|are) )?(?:reading|processing|summari[sz]ing|parsing|analy[sz]ing|indexing|scraping|crawling|visiting|ingesting) (?:this|these|the following)\b"
            + r"(?: [\w'-]+){0,3}?(?::| (?:should|must|shall|need to|have to|are required to|are instructed to|will|please)\b)"
        ),
        negatable=False,
    ),
    Group(
        "concealment",
        "en",
        ("do", "don't", "never", "not", "without", "keep", "hide", "the"),
        re.compile(
            r"(?:do not|don't|never|not|without) (?:tell|telling|mention|mentioning|reveal|revealing|disclose|disclosing|inform|informing|alert|alerting|notify|notifying|show|showing)"
            + r"(?: (?:this|it|anything|these instructions|this note|this message|this comment|that))?(?: (?:to|with))? (?:the |your )?(?:user|human)s?\b"
            + r"(?! (?:whether|if|that (?:the|their|an?) (?:account|email|user|password)|which|why|what (?:is|was) wrong|the (?:reason|cause|details)))"
            + r"|(?:keep|hide) (?:this|it|these|that)(?: [\w-]+)? (?:secret |hidden |quiet )?from (?:the |your )?(?:user|human)s?\b"
            + r"|the (?:user|human) (?:must|should) (?:not|never) (?:know|find out|see|notice|learn|be told)\b"
        ),
        negatable=False,
    ),
]
