"""Phrase-rule patterns for Chinese (simplified and traditional), Spanish, Portuguese, Italian,
French, German, Russian, Japanese and Korean (see :mod:`patchbay.runtime.screening._phrases`).
Chinese, Japanese and Korean heads are literal strings (no spaces to split words on)."""

from __future__ import annotations

import re

from patchbay.runtime.screening._groups import ZH_GAP, Group, alt

__all__ = ["OTHER", "ZH"]

# --- Chinese ------------------------------------------------------------------------------------

_ZH_VERBS = (
    "忽略",
    "忽視",
    "忽视",
    "无视",
    "無視",
    "不要理会",
    "不要理會",
    "别管",
    "別管",
    "不用管",
    "跳过",
    "跳過",
    "抛开",
    "拋開",
    "忘记",
    "忘記",
    "忘掉",
    "丢弃",
    "丟棄",
    "放弃",
    "放棄",
    "绕过",
    "繞過",
    "违背",
    "違背",
    "不要遵守",
    "不要遵循",
    "不再遵守",
    "不再遵循",
    "停止遵守",
    "停止遵循",
    "覆盖",
    "覆蓋",
)
_ZH_VERB = alt(*_ZH_VERBS)
_ZH_QUALS = (
    "之前",
    "以前",
    "先前",
    "此前",
    "上面",
    "上述",
    "前面",
    "以上",
    "上文",
    "原来",
    "原來",
    "原先",
    "原有",
    "最初",
    "你的",
    "您的",
    "你之前",
    "系统",
    "系統",
    "开发者",
    "開發者",
    "默认",
    "預設",
    "内置",
    "內置",
)
_ZH_QUAL = alt(*_ZH_QUALS)
_ZH_NOUN = alt(
    "指令",
    "指示",
    "提示词",
    "提示詞",
    "系统提示",
    "系統提示",
    "提示",
    "命令",
    "设定",
    "設定",
    "规则",
    "規則",
    "约束",
    "約束",
    "限制",
    "要求",
    "安排",
    "规定",
    "規定",
)
_ZH_SECRET = alt(
    "api ?密钥",
    "api ?密鑰",
    "api ?key",
    "密钥",
    "密鑰",
    "密码",
    "密碼",
    "口令",
    "令牌",
    "token",
    "凭证",
    "憑證",
    "凭据",
    "憑據",
    "私钥",
    "私鑰",
    "环境变量",
    "環境變量",
    "環境變數",
    "cookie",
    "聊天记录",
    "聊天記錄",
    "对话记录",
    "對話記錄",
)
_ZH_AI = alt(
    "ai",
    "人工智能",
    "大模型",
    "语言模型",
    "語言模型",
    "大语言模型",
    "大語言模型",
    "聊天机器人",
    "聊天機器人",
    "机器人",
    "機器人",
    "智能体",
    "智能體",
    "agent",
    "助手",
    "模型",
)
_ZH_PROMPT_VERBS = (
    "输出",
    "輸出",
    "打印",
    "显示",
    "顯示",
    "告诉我",
    "告訴我",
    "重复",
    "重複",
    "泄露",
    "洩露",
    "透露",
    "展示",
    "给出",
    "給出",
    "复述",
    "複述",
    "列出",
    "发送",
    "發送",
    "给我",
    "給我",
    "说出",
    "說出",
    "公开",
    "公開",
    "把",
)
_ZH_SECRET_VERBS = (
    "输出",
    "輸出",
    "打印",
    "显示",
    "顯示",
    "告诉",
    "告訴",
    "发送",
    "發送",
    "发给",
    "發給",
    "发到",
    "發到",
    "泄露",
    "洩露",
    "透露",
    "给我",
    "給我",
    "列出",
    "上传",
    "上傳",
    "提供",
    "交出",
    "转发",
    "轉發",
    "贴出",
    "貼出",
    "把",
)

ZH: list[Group] = [
    Group(
        "instruction_override",
        "zh",
        (*_ZH_VERBS, *_ZH_QUALS, "你的新"),
        re.compile(
            _ZH_VERB
            + "[掉了]?"
            + ZH_GAP
            + "{0,6}?"
            + _ZH_QUAL
            + ZH_GAP
            + "{0,10}?"
            + _ZH_NOUN
            + "|"
            + _ZH_QUAL
            + ZH_GAP
            + "{0,6}?"
            + _ZH_NOUN
            + ZH_GAP
            + "{0,6}?"
            + alt(
                "作废",
                "作廢",
                "无效",
                "無效",
                "失效",
                "不再有效",
                "不再适用",
                "不再適用",
                "全部取消",
                "已取消",
                "已被取消",
                "已经取消",
                "已經取消",
                "一律作废",
            )
            + "|你的新"
            + alt("指令", "任务", "任務", "目标", "目標", "角色")
            + "(?:是|为|為|:)"
        ),
        gate="zh",
    ),
    Group(
        "role_switch",
        "zh",
        ("你", "您", "从现在", "從現在", "现在", "現在", "扮演", "是", "成为", "成為", "作为", "作為"),
        re.compile(
            "(?:你|您)(?:现在|現在|从现在起|從現在起|从现在开始|從現在開始|已经|已經|已)?(?:是|处于|處於|进入了?|進入了?|切换到|切換到|变成|變成|成为|成為|在)"
            + ZH_GAP
            + "{0,8}?"
            + alt(
                "开发者模式",
                "開發者模式",
                "管理员模式",
                "管理員模式",
                "越狱",
                "越獄",
                "上帝模式",
                "调试模式",
                "調試模式",
                "无限制",
                "無限制",
                "不受限制",
                "不受任何限制",
                "超级用户",
                "超級用戶",
                "root ?模式",
                "dan",
                "god ?模式",
                "sudo ?模式",
                "特权模式",
                "特權模式",
            )
            + "|(?:从)?现在(?:开始|起)[,，]?"
            + ZH_GAP
            + "{0,3}?你(?:是|将|將|就是|扮演|将扮演|将成为|不再是|只能)"
            + "|(?:從)?現在(?:開始|起)[,，]?"
            + ZH_GAP
            + "{0,3}?你(?:是|將|就是|扮演|將扮演|將成為|不再是|只能)"
            + "|(?:是|成为|成為|扮演|作为|作為)(?:一个|一個|一名|一位)?"
            + ZH_GAP
            + "{0,4}?(?:没有|沒有|不受|无|無)(?:任何)?"
            + ZH_GAP
            + "{0,4}?(?:限制|约束|約束|规则|規則|道德|审查|審查)"
            + "|扮演"
            + ZH_GAP
            + "{0,6}?(?:没有|沒有|不受|无|無)(?:任何)?"
            + ZH_GAP
            + "{0,4}?(?:限制|约束|約束|规则|規則|道德|审查|審查)"
            + "|你(?:没有|沒有|不受|不再受|不用遵守|无需遵守|無需遵守)(?:任何)?"
            + ZH_GAP
            + "{0,4}?(?:限制|约束|約束|规则|規則|审查|審查|道德)"
        ),
    ),
    Group(
        "system_prompt_request",
        "zh",
        (*_ZH_PROMPT_VERBS, "你的", "您的"),
        re.compile(
            alt(*_ZH_PROMPT_VERBS)
            + ZH_GAP
            + "{0,6}?(?:你|您)(?:的|收到的|得到的|最初的|被设定的|被設定的)"
            + ZH_GAP
            + "{0,6}?"
            + alt(
                "系统提示词",
                "系統提示詞",
                "系统提示",
                "系統提示",
                "提示词",
                "提示詞",
                "初始指令",
                "系统指令",
                "系統指令",
                "指令",
                "设定",
                "設定",
                "system prompt",
                "prompt",
                "系统消息",
                "系統消息",
                "系統訊息",
                "系统信息",
                "系統信息",
                "初始消息",
                "第一条消息",
                "第一條消息",
            )
            + "|(?:你的|您的)(?:系统提示|系統提示|提示词|提示詞|初始指令|system prompt)(?:词|詞)?(?:是什么|是什麼|内容是|是啥)"
        ),
    ),
    Group(
        "secret_request",
        "zh",
        _ZH_SECRET_VERBS,
        re.compile(
            alt(*_ZH_SECRET_VERBS)
            + ZH_GAP
            + "{0,12}?"
            + alt("你的", "您的", "用户的", "用戶的", "使用者的", "管理员", "管理員", "系统的", "系統的")
            + ZH_GAP
            + "{0,8}?"
            + _ZH_SECRET
        ),
    ),
    Group(
        "ai_directive",
        "zh",
        ("如果你是", "如果您是", "致", "给所有", "給所有"),
        re.compile(
            "如果(?:你|您)是(?:一个|一個|一名|一位)? ?"
            + _ZH_AI
            + "(?: ?(?:助手|模型|agent))?"
            + r"(?!(?:研究|工程|开发|開發|公司|从业|從業|爱好|愛好|产品|產品|团队|團隊|领域|領域|方向|专业|專業))"
            + "|(?:致|给所有|給所有)(?:所有|任何)? ?"
            + _ZH_AI
            + "(?:助手)? ?[:,的]"
        ),
        negatable=False,
    ),
    Group(
        "concealment",
        "zh",
        ("不要", "别", "別", "切勿", "请勿", "請勿", "不得", "不能", "瞒着", "瞞著"),
        re.compile(
            "(?:不要|别|別|切勿|请勿|請勿|不得|不能)(?:告诉|告訴|透露给|透露給|让|讓)(?:用户|用戶|使用者)(?!"
            + ZH_GAP
            + "{0,6}?(?:是否|存在))"
            + "|(?:瞒着|瞞著)(?:用户|用戶|使用者)"
        ),
        negatable=False,
    ),
]

# --- Other languages ----------------------------------------------------------------------------

OTHER: list[Group] = [
    Group(
        "instruction_override",
        "es",
        (
            "ignora",
            "ignore",
            "ignorad",
            "ignoren",
            "olvida",
            "olvide",
            "olvidad",
            "olviden",
            "descarta",
            "descarte",
            "omite",
            "omita",
            "haz",
            "no",
            "deja",
            "pasa",
        ),
        re.compile(
            r"(?:ignora|ignore|ignorad|ignoren|olvida|olvide|olvidad|olviden|descarta|descarte|omite|omita|haz caso omiso (?:a|de)"
            r"|no hagas caso (?:a|de)|no sigas|deja de seguir|pasa por alto)(?: \w+){0,3}? (?:instrucciones|indicaciones|órdenes|ordenes"
            r"|directrices|reglas|normas|instrucción) (?:anteriores|previas|originales|iniciales|del sistema|de sistema|que (?:te|recibiste))"
            r"|(?:ignora|ignore|olvida|olvide|descarta|omite) (?:todas )?(?:tus|sus) (?:instrucciones|reglas|directrices|indicaciones)\b"
            r"|(?:ignora|ignore|olvida|olvide|descarta|omite) (?:todo|todas?|cualquier cosa) (?:lo )?(?:anterior|previo|de antes|que te (?:dije|dijeron|han dicho))\b"
        ),
    ),
    Group(
        "instruction_override",
        "pt",
        ("ignore", "ignora", "esqueça", "esqueca", "desconsidere", "descarte", "despreze"),
        re.compile(
            r"(?:ignore|ignora|esqueça|esqueca|desconsidere|descarte|despreze)(?: \w+){0,3}? (?:instruções|instrucoes|orientações|regras"
            r"|diretrizes|ordens) (?:anteriores|prévias|previas|originais|iniciais|do sistema)"
            r"|(?:ignore|ignora|esqueça|esqueca|desconsidere) (?:todas )?(?:as )?(?:suas|tuas) (?:instruções|instrucoes|regras|diretrizes)\b"
            r"|(?:ignore|ignora|esqueça|esqueca|desconsidere) tudo (?:o que (?:foi dito|te disseram|eu disse|está acima)|acima|antes|anterior)\b"
        ),
    ),
    Group(
        "instruction_override",
        "it",
        ("ignora", "ignorate", "dimentica", "dimenticate", "trascura", "non"),
        re.compile(
            r"(?:ignora|ignorate|dimentica|dimenticate|trascura|non seguire)(?: \w+){0,3}? (?:istruzioni|indicazioni|regole|direttive)"
            r" (?:precedenti|originali|iniziali|di sistema|del sistema)"
            r"|(?:ignora|dimentica) (?:tutte )?(?:le )?(?:tue) (?:istruzioni|regole|direttive)\b"
        ),
    ),
    Group(
        "instruction_override",
        "fr",
        ("ignore", "ignorez", "ignores", "oublie", "oubliez", "oublies", "ne", "fais", "faites", "néglige", "négligez"),
        re.compile(
            r"(?:ignore[zs]?|oublie[zs]?|ne tiens pas compte|ne tenez pas compte|fais abstraction|faites abstraction|ne suis pas"
            r"|ne suivez pas|néglige[z]?)(?: [\w']+){0,3}? (?:instructions|consignes|directives|règles|regles|indications|ordres)"
            r" (?:précédentes|precedentes|antérieures|anterieures|initiales|d'origine|originales|du système|du systeme|système|ci-dessus)"
            r"|(?:ignore[zs]?|oublie[zs]?) (?:toutes )?(?:tes|vos) (?:instructions|consignes|directives|règles)\b"
            r"|(?:ignore[zs]?|oublie[zs]?) tout ce qui (?:précède|precede|a été dit|t'a été dit)\b"
        ),
        gate="en",
    ),
    Group(
        "instruction_override",
        "de",
        (
            "ignoriere",
            "ignorier",
            "ignorieren",
            "vergiss",
            "vergessen",
            "missachte",
            "missachten",
            "übergehe",
            "verwirf",
            "vernachlässige",
            "vorherigen",
            "vorherige",
            "vorigen",
            "vorige",
            "bisherigen",
            "bisherige",
            "obigen",
            "obige",
            "früheren",
            "frühere",
            "ursprünglichen",
            "ursprüngliche",
        ),
        re.compile(
            r"(?:ignoriere|ignorier|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|übergehe|verwirf|vernachlässige)"
            r"(?: \w+){0,3}? (?:vorherig|vorig|bisherig|obig|früher|ursprünglich|vorangegangen|vorhergehend|dein|ihre|system)\w*"
            r" (?:\w+ )?(?:anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien|anordnungen|prompts?)\b"
            r"|(?:vorherig|vorig|bisherig|obig|früher|ursprünglich)\w* (?:anweisungen|instruktionen|befehle|vorgaben) (?:\w+ ){0,2}?(?:ignorieren|vergessen|missachten)\b"
            r"|(?:vergiss|vergessen sie|ignoriere|ignorieren sie|missachte) alles,? (?:was|bisher|vorher|zuvor|oben|davor|bisherige)\b"
        ),
    ),
    Group(
        "instruction_override",
        "ru",
        (
            "игнорируй",
            "игнорируйте",
            "проигнорируй",
            "проигнорируйте",
            "забудь",
            "забудьте",
            "не",
            "отбрось",
            "пропусти",
        ),
        re.compile(
            r"(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|не обращай внимания на|отбрось|пропусти)"
            r"(?: \w+){0,3}? (?:предыдущие|прежние|предшествующие|все|свои|твои|ваши|системные|исходные|первоначальные)"
            r"(?: \w+)? (?:инструкции|указания|правила|команды|директивы|установки)"
        ),
    ),
    Group(
        "instruction_override",
        "ja",
        ("以前", "前", "上記", "これまで", "今まで", "先ほど", "先程", "最初", "元", "全て", "すべて", "あなた"),
        re.compile(
            r"(?:以前|前|上記|これまで|今まで|先ほど|先程|最初|元|全て|すべて|あなた)の(?:[^\s。、]{0,6}?)?(?:指示|命令|プロンプト|ルール|指令|制約)"
            r"(?:は|を)?(?:すべて|全て|全部)?(?:無視|忘れ|破棄|取り消)"
        ),
    ),
    Group(
        "instruction_override",
        "ko",
        ("이전", "앞", "위", "기존", "너의", "당신의", "모든"),
        re.compile(
            r"(?:이전|앞|위|기존|너의|당신의|모든)의?(?: \S+){0,2}? ?(?:지시|명령|지침|프롬프트|규칙)\S{0,3} ?(?:모두 |전부 )?(?:무시|잊)"
        ),
    ),
    Group(
        "role_switch",
        "es",
        ("ahora", "a", "desde"),
        re.compile(
            r"(?:ahora|a partir de ahora|desde ahora)(?:,)? (?:tú )?(?:eres|estás|serás|actuarás como) (?:en )?(?:un |una |el |la )?(?:\w+ )?"
            r"(?:modo (?:administrador|desarrollador|dios|sin restricciones|sin filtros|jailbreak|dan)|sin restricciones|sin filtros|sin censura|dan\b)"
        ),
    ),
    Group(
        "role_switch",
        "pt",
        ("a", "de", "agora", "você", "voce", "tu"),
        re.compile(
            r"(?:(?:a partir de agora|de agora em diante|agora),? )?(?:você|voce|tu) (?:é|e|és|está|esta|será|sera|vai ser|estás) (?:agora )?(?:\w+ ){0,3}?"
            r"(?:sem (?:restrições|restricoes|filtros|limites|censura|regras)|(?:no |em )?modo (?:desenvolvedor|administrador|admin|deus|dan|sem restrições))\b"
        ),
    ),
    Group(
        "role_switch",
        "it",
        ("da", "d'ora", "ora", "sei", "tu"),
        re.compile(
            r"(?:(?:da ora in poi|d'ora in poi|ora),? )?(?:tu )?sei (?:ora )?(?:\w+ ){0,3}?"
            r"(?:senza (?:restrizioni|filtri|limiti|regole|censura)|in modalità (?:sviluppatore|amministratore|admin|dio|dan))\b"
        ),
    ),
    Group(
        "role_switch",
        "fr",
        ("tu", "vous", "à", "désormais", "dorénavant"),
        re.compile(
            r"(?:tu es|vous êtes|tu seras)(?: maintenant| désormais| dorénavant)? (?:en )?mode (?:administrateur|admin|développeur|developpeur|dieu|sans restriction|sans filtre|dan|jailbreak)"
            r"|(?:à partir de maintenant|désormais|dorénavant),? (?:tu es|tu seras|tu agis|tu agiras|vous êtes|vous serez)\b"
            r"|(?:tu n'as|vous n'avez) (?:plus |pas |désormais )*(?:aucune?|de) (?:restrictions?|limites?|règles?|filtres?|censure|limitations?)\b"
        ),
    ),
    Group(
        "role_switch",
        "de",
        ("du", "sie", "ab"),
        re.compile(
            r"(?:du bist|sie sind)(?: jetzt| nun| ab sofort| ab jetzt)? (?:im|in einem|ein|eine) (?:admin|administrator|entwickler|gott|dan|jailbreak|uneingeschränkt\w*)-?(?:modus)?\b"
            r"|ab (?:jetzt|sofort) bist du\b|(?:du|sie) (?:hast|haben) (?:jetzt |ab sofort )?keine (?:einschränkungen|regeln|filter|grenzen)"
        ),
    ),
    Group(
        "role_switch",
        "ja",
        ("あなた", "君", "きみ", "お前"),
        re.compile(
            r"(?:あなた|君|きみ|お前)は(?:今から|これから|今|現在)?、?(?:管理者|開発者|デベロッパー|ゴッド|脱獄|無制限|dan)モード"
            r"|(?:あなた|君|きみ|お前)(?:には|は)(?:もう)?(?:一切の|何の)?(?:制限|制約|ルール)(?:は|が)?(?:ありません|ない)"
        ),
    ),
    Group(
        "system_prompt_request",
        "fr",
        ("affiche", "montre", "révèle", "revele", "répète", "repete", "donne", "écris", "ecris", "imprime", "dis"),
        re.compile(
            r"(?:affiche|montre|révèle|revele|répète|repete|donne(?:-moi)?|écris|ecris|imprime|dis(?:-moi)?)[ -](?:moi )?(?:ton|tes|votre|vos) (?:prompt|instructions|consignes)(?: (?:système|systeme|initiales?|d'origine))?\b"
        ),
        gate="en",
    ),
    Group(
        "system_prompt_request",
        "es",
        (
            "muestra",
            "muéstrame",
            "revela",
            "imprime",
            "dime",
            "repite",
            "escribe",
            "dame",
            "enséñame",
            "cuál",
            "cuáles",
            "cual",
            "cuales",
        ),
        re.compile(
            r"(?:muestra|muéstrame|revela|imprime|dime|repite|escribe|dame|enséñame)(?: me)? (?:tu|tus) (?:prompt|instrucciones|indicaciones)(?: (?:del sistema|de sistema|iniciales|originales))?\b"
            r"|(?:cuál es|cuáles son|cual es|cuales son) tus? (?:prompt|instrucciones|indicaciones) (?:de sistema|del sistema|iniciales|originales)\b"
        ),
    ),
    Group(
        "system_prompt_request",
        "de",
        ("zeige", "zeig", "gib", "nenne", "wiederhole", "verrate", "schreibe", "drucke"),
        re.compile(
            r"(?:zeige|zeig|gib|nenne|wiederhole|verrate|schreibe|drucke)(?: mir)?(?: \w+){0,2}? (?:deinen?|deine) (?:system-?prompt|systemanweisungen|anweisungen|instruktionen|vorgaben)\b"
        ),
    ),
    Group(
        "system_prompt_request",
        "it",
        ("rivela", "mostra", "stampa", "ripeti", "dimmi"),
        re.compile(
            r"(?:rivela|mostra|stampa|ripeti|dimmi)(?: il| i| le)? (?:tuo |tuoi |tue )?(?:prompt di sistema|istruzioni (?:iniziali|di sistema))\b"
        ),
    ),
    Group(
        "system_prompt_request",
        "ja",
        ("システムプロンプト", "初期指示", "初期プロンプト", "最初の指示", "隠された指示"),
        re.compile(
            r"(?:システムプロンプト|初期指示|初期プロンプト|最初の指示|隠された指示)(?:の内容|の全文|の中身|の全部)?を(?:すべて|全て|そのまま)?(?:表示|出力|教え|見せ|開示|公開|書き出|繰り返)"
        ),
    ),
    Group(
        "system_prompt_request",
        "ko",
        ("시스템",),
        re.compile(r"시스템 ?프롬프트\S{0,2} ?(?:를|을)? ?(?:출력|보여|알려|공개|표시|말해)"),
    ),
]
