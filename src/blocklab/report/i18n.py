"""Every word of the report that is not data, in English and Chinese.

`t(key, lang)` returns the string; `{name}` placeholders are filled by the caller with
`str.format`. Figure captions live in `CAPTIONS` (what the figure shows; the reproducing command
is appended by the renderer). A missing key raises KeyError: a typo must not render silently.
A suite's heading is the suite's own (`Suite.heading`), so a new suite needs no words here.
"""

from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    # page frame
    "title": ("blocklab report: FFN, normalization and position encoding, computed and measured",
              "blocklab 报告：FFN、归一化与位置编码的计算与实测"),
    "generated": ("Suite size {size}; results read from {results}; generated {created} by "
                  "blocklab {version}.",
                  "实验规模 {size}；结果读取自 {results}；由 blocklab {version} 生成于 {created}。"),
    "reproduce_all": ("Reproduce this page", "复现本页"),
    "contents": ("Contents", "目录"),
    "lang_switch": ("中文版：blocklab report --lang zh", "English: blocklab report --lang en"),
    # sections
    "sec_ledger": ("Claims ledger", "论断账本"),
    "sec_ffn": ("Feed-forward network", "前馈网络（FFN）"),
    "sec_norm": ("Normalization", "归一化"),
    "sec_placement": ("Norm placement: pre, post, sandwich", "归一化位置：Pre、Post 与 Sandwich"),
    "sec_position": ("Position encodings", "位置编码"),
    "sec_deploy": ("Deployment: prefill, decode and the KV cache",
                   "部署：预填充、解码与 KV 缓存"),
    "sec_findings": ("What the pages got right and wrong", "两个页面说对与说错了什么"),
    "what_to_use": ("What to use", "可以直接用的结论"),
    "colon": (": ", "："),
    "sec_claims": ("The claims one by one", "逐条论断"),
    "sec_terms": ("Terms", "术语"),
    "terms_intro": ("The statistical words of this page; each links here at its first use in "
                    "a section, its definition shown on hover. The full glossary is "
                    "docs/glossary.md in the blocklab repository.",
                    "本页用到的统计术语；每个术语在各节首次出现时链接到此处，悬停即显示定义。完整术语表见 blocklab "
                    "仓库中的 docs/glossary.md。"),
    "sub_ffn_budget": ("Parameter and activation budgets (page 000, practice task)",
                       "参数与激活预算（页面 000 实践任务）"),
    "sub_shift_scale": ("Shift and scale invariance", "平移与缩放不变性"),
    "sub_jacobians": ("Analytic Jacobians against finite differences",
                      "解析雅可比与有限差分对照"),
    "placement_deep_note": ("The largest stable learning rates of this suite (its sweep tables: "
                            "pre vs post norm at the training depth, and in deep stacks of 50 "
                            "layers and more) settle C19's stability parts and C36; their figure "
                            "and graded parts are under ",
                            "本实验的最大稳定学习率（扫描表：训练深度下以及 50 层及以上深层堆叠中的 Pre 与 Post 对比）"
                            "用于判定 C19 的稳定性部分与 C36；其图与分项判定见 "),
    "sub_rope_check": ("RoPE relative-position check", "RoPE 相对位置检查"),
    "sub_flops": ("Where the FLOPs go", "FLOPs 的去向"),
    "sub_kv": ("KV cache", "KV 缓存"),
    "quantize_intro": ("Real int8 quantization (torchao) of a model's FFN, attention or all "
                       "linear layers, weight-only or with dynamic activations: speed of "
                       "prefill and decode against their bounds, and the error on a trained "
                       "model. The figure and verdicts are with the claims:",
                       "用 torchao 对模型的 FFN、注意力或全部线性层做真实的 int8 量化（仅权重，或动态激活）："
                       "预填充与解码的速度及其上界，以及训练后模型上的误差。图与判定见论断："),
    # ledger
    "ledger_intro": ("One line per claim: its verdict, the page's statement in brief, what was "
                     "found here, and a link to the claim's section below, which shows its "
                     "parts and folds its rules and full evidence under details.",
                     "每条论断一行：判定、页面说法的摘要、此处的发现，以及指向下文该论断小节的链接；"
                     "小节中列出其各部分，规则与完整证据收在“详情”里。"),
    "provenance": ("Experimental claims are graded by rules registered before the data "
                   "(metric, smallest effect, margin, seeds), but {edits} edits to the rules of "
                   "{claims} claims were made after the data had been seen: each of those "
                   "claims says how many on a line of its own (“Rules edited after the data”) "
                   "and lists every edit, dated, under its details.",
                   "实验性论断按数据之前登记的规则判定（指标、最小效应、等价边界、种子数），但其中 {claims} 条论断的规则"
                   "在看到数据之后被修改了 {edits} 处：这些论断各用单独一行写明处数（“结果公布后修改的规则”），"
                   "并在详情中逐条列出修改及其日期。"),
    "provenance_none": ("Experimental claims are graded by rules registered before the data "
                        "(metric, smallest effect, margin, seeds); none was edited after the "
                        "data had been seen.",
                        "实验性论断按数据之前登记的规则判定（指标、最小效应、等价边界、种子数）；没有规则在看到数据之后被修改。"),
    "levels": ("Each interval is shown at the level that decided its part, so the levels "
               "differ ({low} to {high}): Holm's correction shares a claim's 5% error rate "
               "among its parts, and each look of a sequential design spends only its share of "
               "it (O'Brien–Fleming), so the earlier looks are read at stricter levels.",
               "每个置信区间都按判定该部分时所用的水平给出，因此水平各不相同（{low} 至 {high}）：Holm 校正把一条论断"
               "的 5% 错误率分给其各部分，序贯设计的每次查看也只用掉其中自己的份额（O'Brien–Fleming），"
               "因此越早的查看按越严格的水平读取。"),
    "verdict_meanings": ("What each verdict means", "各判定的含义"),
    "col_id": ("id", "编号"),
    "see_figure": ("see figure", "见图"),
    "figure_above": ("Figure {n}, above", "见上方图 {n}"),
    "numbers": ("numbers", "数值"),
    "source": ("On the page", "页面出处"),
    "check_failed": ("check failed", "检查失败"),
    "rule": ("rule", "规则"),
    "combined": ("combined", "合并规则"),
    "verdict_counts": ("Verdicts", "判定统计"),
    "details": ("details", "详情"),
    # one line per part: "<name> <estimate>, claimed <claim>: <why>"
    "part_line": ("{name}: {estimate}, {claimed}; {why}", "{name}：{estimate}，{claimed}；{why}"),
    "part_claimed": ("claimed {claim}", "声称 {claim}"),
    "rule_changed": ("Rule changed after the data were seen ({date}): {what}",
                     "结果公布后修改的规则（{date}）：{what}"),
    "rules_changed": ("Rules edited after the data: {n} (latest {date}), see details",
                      "结果公布后修改的规则：{n} 处（最近 {date}），见详情"),
    "tested_at": ("Tested here at {scale}.", "本地测试规模：{scale}。"),
    "papers": ("Published, each at its own scale", "已发表的结果（各在其自身规模）"),
    "ladder": ("On the ladder of sizes (each rung 2× the compute of the one below): where "
               "each part is first decided", "规模阶梯（每一级的训练算力是下一级的 2 倍）：各部分最早在哪一级判定"),
    "paper_secondary": ("read in a copy of the table", "转引自他处的表格"),
    "why_run": ("the finding; nothing is claimed", "实验结果，无所声称"),
    # {c}: the coverage of the interval the decision read ("99.64%"), never a fixed 95%
    "why_beyond": ("the {c} CI lies beyond {b}", "{c} 置信区间整体越过 {b}"),
    "why_band_in": ("the {c} CI lies inside the band", "{c} 置信区间落在区间带内"),
    "why_contradicted": ("the {c} CI lies beyond δ {d} on the opposite side, and a 2× longer "
                         "run agrees", "{c} 置信区间整体在相反一侧越过 δ {d}，且 2 倍长的训练结论一致"),
    "why_would_contradict": ("beyond δ on the opposite side; no 2× longer run confirms it yet",
                             "在相反一侧越过 δ；尚无 2 倍长的训练确认"),
    "why_no_effect": ("no effect: the {c} CI lies inside ±{m}", "无效应：{c} 置信区间落在 ±{m} 内"),
    "why_short": ("the {c} CI lies wholly short of {b}", "{c} 置信区间整体未达 {b}"),
    "why_band_out": ("the {c} CI lies outside the band", "{c} 置信区间落在区间带之外"),
    "why_holm": ("Holm's procedure stopped before this part", "Holm 逐步程序在此部分之前停止"),
    "why_no_interval": ("{n} seed(s), no interval yet (the rule needs {min})",
                        "{n} 个种子，尚无置信区间（规则至少需要 {min} 个）"),
    "why_few_seeds": ("{n} of the rule's {min} seeds", "{n} 个种子，规则至少需要 {min} 个"),
    "why_straddles": ("the {c} CI straddles {b}", "{c} 置信区间跨过 {b}"),
    "why_needed": ("; about {needed} seeds would decide it", "；约 {needed} 个种子可判定"),
    "why_cost": (" (+{extra}, about {time} here)", "（再加 {extra} 个，本机约 {time}）"),
    "seconds": ("{n:.0f} s", "{n:.0f} 秒"),
    "minutes": ("{n} min", "{n} 分钟"),
    "forest_caption": ("{id}: each part in its metric's units with the interval that decided "
                       "it, coloured by its decision; the key is under figure {n}.",
                       "{id}：每个部分按其指标的单位绘制，附判定它的置信区间，颜色表示判定；图例见图 {n}。"),
    # the sequential design as run
    "design_budget": ("Plan of work (registered before the data; cap: {budget}) on {workers} "
                      "worker processes: the suites ran at their planned seeds (the first look), "
                      "then {looks} further look(s) added {runs} run(s) to the arms of undecided "
                      "parts; it stopped because {stopped}.",
                      "工作计划（在数据之前登记；上限：{budget}），{workers} 个工作进程：各套件先按计划的种子运行（第一次查看），"
                      "随后 {looks} 次追加查看为尚未判定部分的各组增加了 {runs} 次运行；停止原因：{stopped}。"),
    "design_unbounded": ("none, every look", "无，运行每一次查看"),
    "design_cut": ("The cap cut: {what}.", "上限截去：{what}。"),
    "design_open": ("{n} part(s) are still inconclusive: the box below lists each.",
                    "仍有 {n} 个部分尚无定论：下方逐一列出。"),
    "design_longer": ("Runs twice as long for would-be contradictions: {what}.",
                      "为可能的反驳而加倍训练长度的运行：{what}。"),
    # what more seeds would decide
    "budget_sentence": ("With about {minutes} more minutes on this machine ({workers} worker "
                        "processes), these {k} inconclusive parts would likely be decided (80% "
                        "power at the spread seen so far).",
                        "在本机（{workers} 个工作进程）上再运行约 {minutes} 分钟，这 {k} 个尚无定论的部分很可能得到判定"
                        "（按目前观察到的离散程度，80% 功效）。"),
    "budget_none": ("No inconclusive part is within reach of a few more hours on this machine.",
                    "没有尚无定论的部分能在本机再运行几个小时内得到判定。"),
    "budget_beyond": ("{b} more would take longer than {hours:g} hours each here (about "
                      "{minutes} minutes in all).",
                      "另有 {b} 个部分每个在本机都需要超过 {hours:g} 小时（合计约 {minutes} 分钟）。"),
    "budget_unsized": ("{u} other inconclusive part(s) cannot be priced yet: too few seeds to "
                       "read their spread, or more seeds than the rules look at.",
                       "另有 {u} 个尚无定论的部分暂无法估算：种子太少，读不出离散程度，或所需种子超出规则考虑的范围。"),
    "budget_design": ("{d} more would need more seeds than their registered designs allow: "
                      "no budget runs them without a redesign registered before more data.",
                      "另有 {d} 个部分所需种子超出其登记设计的上限：不在数据之前登记新设计，任何预算都不会运行它们。"),
    "needs_redesign": ("past its design: {redesign}", "超出设计：{redesign}"),
    "budget_which": ("which parts, and what each costs", "是哪些部分，各需多少代价"),
    "budget_caption": ("Seeds needed: 80% power at the observed spread. Cost of a seed: the "
                       "stored wall time of the runs of the arms the part compares (the whole "
                       "suite's where not known), per seed or repeat; the extra seeds' runs "
                       "share {workers} workers, timed runs run alone; the total prices each "
                       "arm once.",
                       "所需种子数：按观察到的离散程度达到 80% 功效。每个种子的代价：该部分所比较各组的已存运行的墙钟时间"
                       "（不明时取整个实验），按每个种子或每次重复计；新增种子的运行由 {workers} 个工作进程分担，计时运行单独进行；"
                       "合计时每组只计一次。"),
    "whole_suite": ("whole suite", "整个实验"),
    "col_part": ("part", "部分"),
    "col_n": ("n", "n"),
    "col_needed": ("seeds needed", "所需种子"),
    "col_extra": ("extra", "新增"),
    "col_seed_cost": ("s per seed", "每种子秒数"),
    "col_minutes": ("minutes", "分钟"),
    "col_arms": ("arms", "组"),
    # generic
    "missing_suite": ("No stored results of the {suite} suite ({size}) under {results}. Run:",
                      "{results} 下没有 {suite} 实验（{size}）的结果。请运行："),
    "busy_timing": ("Timed on a busy machine: other processes used {share:.0%} of the CPU "
                    "while {label} was measured; its timings may read slow. Run it again on a "
                    "quiet machine.",
                    "计时时机器繁忙：测量 {label} 期间其他进程占用了 {share:.0%} 的 CPU，"
                    "其计时可能偏慢。请在空闲机器上重新运行。"),
    "suite_failed": ("The {suite} suite failed while running: {error}",
                     "{suite} 实验运行失败：{error}"),
    "suite_meta": ("{suite} suite, size {size}: {runs} runs, {seeds} seed(s) per arm, "
                   "{train:.0f} s of training.",
                   "{suite} 实验，规模 {size}：共 {runs} 次运行，每组 {seeds} 个种子，训练耗时 "
                   "{train:.0f} 秒。"),
    "notes": ("Notes", "备注"),
    "command": ("Reproduce", "复现命令"),
    "figure": ("Figure", "图"),
    "figure_failed": ("This figure could not be drawn from the stored results: {error}",
                      "无法根据已存结果绘制此图：{error}"),
    "pass": ("pass", "通过"),
    "fail": ("FAIL", "未通过"),
    "yes": ("yes", "是"),
    "no": ("no", "否"),
    # ffn budget
    "ffn_budget_intro": ("Bias-free plain (2·d·m) and gated (3·d·m) FFNs at the same width m; "
                         "one of B, T, d, m varies while the others stay at the page's values "
                         "(B={batch}, T={seq_len}, d={d}, m={m}).",
                         "宽度 m 相同的无偏置普通 FFN（2·d·m）与门控 FFN（3·d·m）；每次只改变 B、T、d、m "
                         "之一，其余保持页面取值（B={batch}、T={seq_len}、d={d}、m={m}）。"),
    "col_vary": ("varied", "改变量"),
    "col_value": ("value", "取值"),
    "col_plain_params": ("plain params", "普通参数"),
    "col_gated_params": ("gated params", "门控参数"),
    "col_plain_inter": ("plain intermediate", "普通中间激活"),
    "col_gated_inter": ("gated intermediate", "门控中间激活"),
    # normalization
    "shift_scale_intro": ("Max |N(T·x) − N(x)| for x = {x}, unit gain; T: shift by {shift}, "
                          "scale by ±{scale}, per-channel scale by {channels}. Invariant: that "
                          "deviation within the row's tolerance; sign flip: max |N(T·x) + N(x)| "
                          "within it (the tolerance is float64 rounding plus ε's closed-form "
                          "effect, so an ε > 0 never reads as an exact equality).",
                          "x = {x}、单位增益时的 max |N(T·x) − N(x)|；T：平移 {shift}、缩放 ±{scale}、"
                          "逐通道缩放 {channels}。不变：该偏差在该行容差之内；符号翻转：max |N(T·x) + N(x)| 在容差之内"
                          "（容差为 float64 舍入加上 ε 的闭式影响，因此 ε > 0 时不会按严格相等判断）。"),
    "col_transform": ("transform", "变换"),
    "col_norm": ("norm", "归一化"),
    "col_eps": ("ε", "ε"),
    "col_invariant": ("invariant", "不变"),
    "col_max_dev": ("max deviation", "最大偏差"),
    "col_sign_flip": ("sign flip", "符号翻转"),
    "col_flip_dev": ("max |N(T·x) + N(x)|", "max |N(T·x) + N(x)|"),
    "col_check": ("check", "检查"),
    "col_max_error": ("max error", "最大误差"),
    "col_tol": ("tolerance", "容差"),
    "col_result": ("result", "结果"),
    "t_shift": ("shift", "平移"),
    "t_positive_scale": ("positive scale", "正缩放"),
    "t_negative_scale": ("negative scale", "负缩放"),
    "t_per_channel_scale": ("per-channel scale", "逐通道缩放"),
    # position
    "rope_float64_intro": ("In float64, |score(m, n) − score(m+s, n+s)| for random q, k "
                           "(head_dim 64, m=10, n=3), worst over both layouts:",
                           "float64 中随机 q、k（head_dim 64，m=10，n=3）的 "
                           "|score(m, n) − score(m+s, n+s)|，取两种布局中的最大值："),
    "col_shift": ("shift s", "位移 s"),
    "col_gap": ("max |Δscore|", "最大 |Δscore|"),
    # deployment
    "deploy_intro": ("Matmul FLOPs (2 per multiply-add) and KV-cache bytes (bf16, batch 1) of "
                     "zoo models, from blocklab.budget.",
                     "动物园模型的矩阵乘 FLOPs（每次乘加 2 FLOPs）与 KV 缓存字节数（bf16，batch 1），"
                     "由 blocklab.budget 计算。"),
    "col_model": ("model", "模型"),
    "col_prefill_ffn_share": ("prefill FFN share", "预填充 FFN 占比"),
    "col_decode_gflops": ("decode GFLOPs/token", "解码 GFLOPs/token"),
    "col_decode_attn_share": ("decode attention share", "解码注意力占比"),
    "col_kv": ("KV cache", "KV 缓存"),
    "col_weights": ("weights (bf16)", "权重（bf16）"),
    "col_intensity": ("decode FLOP/byte", "解码 FLOP/byte"),
    "deploy_table_caption": ("At context {context:,}; a decode step below ≈{balance:.0f} "
                             "FLOP/byte (H100 SXM balance point) is memory-bound.",
                             "上下文 {context:,} 时；解码算术强度低于约 {balance:.0f} FLOP/byte"
                             "（H100 SXM 平衡点）即受访存限制。"),
}

# What each ladder figure (`figures.fig_ladder`) draws at a rung, and its fitted line.
_RUNG = (" (mean and 95% CI over its seeds) against training compute",
         "（其种子上的均值与 95% CI）随训练算力的变化")
_FIT = ("the line through the rung means with its 95% band, the rung as the unit, drawn from the "
        "smallest to the top rung only",
        "过各级均值、以级为单位的拟合直线及其 95% 带，只画在最低一级到最高一级之间（其外到已发表结果的细虚线为外推，"
        "不是结论；最早判定该部分的一级画圈）")

# How the norm-cost figure's ratios are read, and what they say.
_RATIO = (" (geometric mean of the paired ratios of interleaved repeats, 95% Student t CI on "
          "their logs)", "（交错重复的逐次配对比值的几何平均，95% 置信区间按对数比值的 Student t 计算）")
_KERNELS = ("Time of RMSNorm divided by LayerNorm's, per hidden size d, for each implementation "
            f"and row count, forward and forward + backward{_RATIO[0]}",
            f"RMSNorm 与 LayerNorm 耗时之比，按隐藏维度 d、实现方式与行数给出，前向与前向 + 反向{_RATIO[1]}")
_FASTER = (" Below 1 RMSNorm is faster; the dotted line is the page's '7% less'.",
           "低于 1 表示 RMSNorm 更快；点线为页面所说的“少 7%”。")

# Figure key -> (English caption, Chinese caption): what the figure shows.
CAPTIONS: dict[str, tuple[str, str]] = {
    "ladder_C16": (f"C16 on the ladder of sizes: each gated FFN's loss change against ReLU at "
                   f"each rung{_RUNG[0]}, {_FIT[0]} (past it, a thin dashed segment to a paper "
                   "is an extrapolation, not a finding; the rung that first decides a part is "
                   "ringed), the page's statement (slate line: the low end of its gain) and the "
                   "published results at their own compute (markers).",
                   f"C16 的规模阶梯：各门控 FFN 相对 ReLU 的损失变化在每一级{_RUNG[1]}，{_FIT[1]}，"
                   "页面的说法（灰蓝线：其提升的下限），以及各自算力下的已发表结果（标记）。"),
    "ladder_C18": (f"C18 on the ladder of sizes: RMSNorm's validation loss minus LayerNorm's at "
                   f"each rung{_RUNG[0]}, {_FIT[0]}, and the page's 'nearly the same quality' "
                   "(slate band: the registered margin).",
                   f"C18 的规模阶梯：每一级 RMSNorm 与 LayerNorm 的验证损失之差{_RUNG[1]}，{_FIT[1]}，"
                   "以及页面的“质量几乎相同”（灰蓝带：登记的容差）。"),
    "ladder_C19": ("C19 on the ladder of sizes: each of the page's statements on where the norm "
                   "sits (pre-norm without and with warmup, post-norm's need for warmup, its "
                   f"lower layers' gradients), at each rung{_RUNG[0]}, each panel in its own "
                   f"unit, {_FIT[0]}, and the page's statement (slate: its boundary or band).",
                   "C19 的规模阶梯：页面关于归一化位置的各项说法（Pre-Norm 有无 warmup、Post-Norm 是否需要 warmup、"
                   f"其低层梯度），每一级{_RUNG[1]}，各面板使用各自的单位，{_FIT[1]}，以及页面的说法（灰蓝色：其边界或区间）。"),
    "ladder_C21": ("C21 on the ladder of sizes: each scheme's loss past the training length L "
                   "against sliding windows of L on the same tokens, at each multiple of L "
                   f"registered, at each rung{_RUNG[0]}, {_FIT[0]}, and the page's statement "
                   "(slate line: its boundary).",
                   "C21 的规模阶梯：各位置编码在训练长度 L 之外的损失相对同一批 token 上长度 L 滑动窗口的损失，"
                   f"在每个登记的倍数、每一级{_RUNG[1]}，{_FIT[1]}，以及页面的说法（灰蓝线：其边界）。"),
    "ladder_C30": ("C30 on the ladder of sizes: RoPE with and without scaling (training-free and "
                   "after the short fine-tune), loss past L against sliding windows of L on the "
                   f"same tokens at 8× and 16× L, at each rung{_RUNG[0]}, {_FIT[0]}, and the "
                   "page's statement (slate line: its boundary).",
                   "C30 的规模阶梯：RoPE 有无缩放（免训练与短微调后）在 8× 与 16× L 处、L 之外的损失相对同一批 token 上"
                   f"长度 L 滑动窗口的损失，每一级{_RUNG[1]}，{_FIT[1]}，以及页面的说法（灰蓝线：其边界）。"),
    "ledger_overview": ("Every part of every experimental claim on one axis, grouped by claim: "
                        "the estimate and the interval that decided it (at the part's level, "
                        "as its line says), coloured by decision as the verdict chips (hollow: "
                        "inconclusive), the stretch the claim allows hatched in slate. The "
                        "axis is normalised per part: a directional part (an effect or a bound) "
                        "is drawn at 1 + (s·x − s·b)/δ, with s the claimed side, b its boundary "
                        "and δ its smallest effect, so the boundary sits at 1 (dashed) and the "
                        "claim holds to the right; for a plain effect 0 is no effect and −1 is "
                        "δ on the opposite side (dotted). A band (equivalence) is drawn at "
                        "(x − claimed)/margin, so the band is [−1, 1]. Intervals past the axis "
                        "end in an arrow. Each claim's section below draws its parts in their own "
                        "units: dashed, the boundary; dotted, δ on the opposite side; ×, the "
                        "claimed size; grey, ±margin of no effect; n and looks at the right.",
                        "所有实验性论断的每个部分画在同一坐标轴上，按论断分组：估计值及判定它的置信区间（按该部分的水平，见其文字行）按判定着色（与判定标签同色，"
                        "空心为尚无定论），灰蓝色斜线为论断允许的范围。坐标按部分归一化：有方向的部分（效应或界限）画在 "
                        "1 + (s·x − s·b)/δ 处，s 为声称的方向，b 为其边界，δ 为最小效应，因此边界位于 1（虚线），论断在其右侧成立；"
                        "对普通效应而言 0 表示无效应，−1 表示相反方向的 δ（点线）。区间带（等价）画在 (x − 声称值)/等价边界 处，"
                        "区间带即 [−1, 1]。超出坐标范围的区间以箭头结束。下方每条论断的小节按各部分自己的单位作图：虚线为边界，"
                        "点线为相反方向的 δ，× 为声称的大小，灰色为无效应的 ±等价边界，右侧为 n 与查看次数。"),
    "ffn_budget": ("Parameters (solid) and intermediate activation elements (dashed) of a plain "
                   "and a gated FFN, varying one of B, T, d, m at a time (log–log). Parameters "
                   "move with d and m only; activations with B, T and m.",
                   "普通与门控 FFN 的参数量（实线）与中间激活元素数（虚线），每次改变 B、T、d、m 之一"
                   "（双对数坐标）。参数只随 d、m 变化；激活随 B、T、m 变化。"),
    "ffn_variants": ("Left: final validation loss of each FFN variant at equal parameter count "
                     "(dots: seeds; bars: mean and 95% CI over the runs that count). Right: "
                     "paired difference to the ReLU FFN in % (negative = better), against the "
                     "page's claimed gains (slate: each range as a bar, × its middle).",
                     "左：等参数量下各 FFN 变体的最终验证损失（点为各种子；横线为计入统计的运行的均值与 95% "
                     "置信区间）。右：相对 ReLU FFN 的配对差值（%，负值更好），灰蓝色为页面声称的提升（条为其范围，× 为中点）。"),
    "ffn_loss_curves": ("Validation loss during training, one line per FFN variant and seed; "
                        "every arm sees the same batches in the same order.",
                        "训练过程中的验证损失，每个 FFN 变体的每个种子一条线；所有变体以相同顺序看到相同的批次。"),
    "width_control": ("C37. Left: validation loss of each model read at FFN width k (the first k "
                      "channels of gate, up and down kept; mean and 95% CI over seeds): (a) "
                      "trained at m and sliced, (b) trained with nested widths m, m/2, m/4, (c) "
                      "trained at m/2 alone. Right: the same against the forward FLOPs per token "
                      "a model of width k costs, so the width reads as compute saved against loss "
                      "paid.",
                      "C37。左：每个模型在 FFN 宽度 k 上读取时的验证损失（保留 gate、up、down 的前 k 个通道；"
                      "种子均值与 95% 置信区间）：(a) 在 m 上训练后切片，(b) 以嵌套宽度 m、m/2、m/4 训练，"
                      "(c) 单独在 m/2 上训练。右：同样的损失对宽度 k 的模型每个 token 的前向 FLOPs，"
                      "即宽度作为控制点时省下的计算与付出的损失。"),
    "scale_trend": ("Left: SwiGLU's validation loss relative to ReLU's (%, paired by seed, each "
                    "arm at its own tuned learning rate) against model size; the slate band is "
                    "the page's claimed 1–2% gain. Right: how much more leaving out warmup "
                    "costs post-norm than pre-norm, against depth. Bars: 95% CIs.",
                    "左：SwiGLU 相对 ReLU 的验证损失（%，按种子配对，各组使用自己调出的学习率）随模型规模的变化；"
                    "灰蓝色带为页面声称的 1–2% 提升。右：去掉 warmup 对 Post-Norm 的代价比对 Pre-Norm 多出多少，"
                    "随深度的变化。误差线为 95% 置信区间。"),
    # norm_cost as drawn (`html.figure_caption`): the kernel panels where per-kernel timings are
    # stored (at --size full), the step's panel where a step was timed
    "norm_cost": (f"{_KERNELS[0]}; right: a whole training step of a small decoder.{_FASTER[0]}",
                  f"{_KERNELS[1]}；右：小型解码器的完整训练步。{_FASTER[1]}"),
    "norm_cost:step": ("Time of a whole training step of a small decoder with RMSNorm divided "
                       "by the same step with LayerNorm, for each path and thread count"
                       f"{_RATIO[0]}; the per-kernel timings by hidden size run at --size full "
                       f"only.{_FASTER[0]}",
                       "小型解码器使用 RMSNorm 的完整训练步耗时除以使用 LayerNorm 的同一训练步，按实现路径与线程数给出"
                       f"{_RATIO[1]}；按隐藏维度的逐内核计时只在 --size full 运行。{_FASTER[1]}"),
    "norm_cost:kernels": (f"{_KERNELS[0]}.{_FASTER[0]}", f"{_KERNELS[1]}。{_FASTER[1]}"),
    "placement_training": ("Training loss of pre-, post- (and sandwich-) norm models without "
                       "gradient clipping, one line per run, one panel per depth, each arm at "
                       "its own tuned peak learning rate; line style = warmup steps, × = the "
                       "run ended diverged, stuck or without learning.",
                       "不做梯度裁剪时 Pre、Post（及 Sandwich）归一化模型的训练损失：每次运行一条线，每个深度"
                       "一个子图（各组用各自调好的峰值学习率）；线型表示 warmup 步数，× 表示该运行以发散、停滞或未学到东西结束。"),
    "placement_deep": ("Largest stable peak learning rate per arm, one dot per seed (bisected "
                       "short runs on a doubling ladder; stable = finished and below the "
                       "unigram entropy), the bar their geometric mean. Left: at the training "
                       "depth (C13, C19); right: the deep stacks (C36). Dotted: the ladder's "
                       "ends (a dot there is censored).",
                       "各组的最大稳定峰值学习率，每个种子一个点（在倍增学习率阶梯上二分的短训练；稳定 = 训练完成且损失"
                       "低于单字节熵），横线为其几何平均。左：训练深度下（C13、C19）；右：深层堆叠（C36）。"
                       "虚线：阶梯两端（落在那里的点是截尾值）。"),
    "placement_gradients": ("At initialisation, no training. Top: gradient norm of each "
                             "layer's FFN output matrix (W_down) in the deepest model. Bottom: "
                             "the last layer's gradient against depth L (log–log) with the "
                             "fitted slope and Xiong et al.'s prediction for Xavier init "
                             "(post 0, pre −0.5).",
                             "初始化时、未训练。上：最深模型中各层 FFN 输出矩阵（W_down）的梯度范数。下：最后一层梯度"
                             "随深度 L 的变化（双对数），附拟合斜率与 Xiong 等人对 Xavier 初始化的预测"
                             "（Post 为 0，Pre 为 −0.5）。"),
    "position_extrapolation": ("Models trained at length L, read at 1×–16× L. Left: loss of "
                               "each position scheme (at 1× over all positions, beyond 1× over "
                               "the positions ≥ L only; a missing point = the scheme cannot run "
                               "there). Middle: the RoPE model with training-free scaling "
                               "(dashed: briefly fine-tuned), against reading the same tokens "
                               "in sliding windows of L (dotted). Right: loss by position at "
                               "the longest length.",
                               "在长度 L 上训练、在 1×–16× L 上评估的模型。左：各位置编码方案的损失（1× 为全部位置，"
                               "更长时只计位置 ≥ L；缺点表示该方案无法在此长度运行）。中：RoPE 模型加免训练 scaling"
                               "（虚线为短暂微调后），点线为以长度 L 的滑动窗口读取相同 token 的损失。右：最长长度下"
                               "各位置的损失。"),
    "position_order": ("C29, each trained decoder of the position suite. Left: total-variation "
                       "distance between its next-token distributions after a validation prefix "
                       "and after the same prefix with all but its last token reversed (grey line at 0: no "
                       "position information; a bidirectional model without positions would "
                       "give 0). Right: validation loss minus the unigram entropy of the "
                       "training bytes. Mean and 95% CI over seeds.",
                       "C29，position 实验中训练好的各解码器。左：验证前缀与“除最后一个 token 外倒序”的同一前缀"
                       "之后下一 token 分布的总变差距离（灰线 0：无位置信息；无位置编码的双向模型应为 0）。右：验证损失"
                       "减去训练字节的 unigram 熵。种子均值与 95% 置信区间。"),
    "position_scaling": ("C30: loss on the positions past L relative to reading the same tokens in "
                         "sliding windows of L (%), against the read length, for RoPE without "
                         "scaling and with NTK-aware or YaRN scaling; solid: training-free, "
                         "dashed: after the short fine-tune (plain RoPE dashed: the same "
                         "fine-tune without scaling). Dotted and dash-dotted lines: the 5% "
                         "(works) and 25% (collapses) bands. Mean and 95% CI over seeds.",
                         "C30：L 之后各位置的损失相对于以长度 L 滑动窗口读取相同 token 的差（%），随读取长度变化；"
                         "分别为无 scaling 的 RoPE、NTK-aware 与 YaRN。实线：免训练；虚线：短暂微调后（RoPE 虚线为"
                         "不加 scaling 的同样微调）。点线与点划线：5%（可用）与 25%（崩溃）分界。种子均值与 95% "
                         "置信区间。"),
    "quantize_speedup": ("C32: speed-up of each int8 scheme over float32 (geometric mean of "
                         "the paired ratios of interleaved repeats, 95% Student t CI on their "
                         "logs), prefill at the longest length (left) and one "
                         "decode step with the KV cache (right); dashed: the bound, Amdahl over "
                         "the quantized layers' FLOP share with their own int8 GEMM speed-up "
                         "(prefill) and the bytes a float step reads over the int8 step's "
                         "(decode). Below 1: slower than float32.",
                         "C32：各 int8 方案相对 float32 的加速比（交替重复逐次配对比值的几何平均，95% 置信区间按对数比值的 "
                         "Student t 计算），左为最长长度的"
                         "预填充，右为带 KV 缓存的一步解码；虚线为上界：预填充按量化层的 FLOP 占比与其自身 "
                         "int8 GEMM 加速比用 Amdahl 定律计算，解码为 float 步与 int8 步读取字节数之比。"
                         "低于 1 表示比 float32 慢。"),
    "position_cost": ("C31: training-step and decode-step time of each position scheme "
                      "divided by that of the same model without positions (one thread, "
                      "interleaved repeats; geometric mean of the paired ratios, 95% Student t "
                      "CI on their logs); dotted: +10%, the rule's "
                      "bound for 'costs little'.",
                      "C31：各位置编码方案的训练步与解码步时间除以无位置编码的同一模型（单线程、交替重复；"
                      "逐次配对比值的几何平均，95% 置信区间按对数比值的 Student t 计算）；点线：+10%，即规则中“开销很小”的上限。"),
    "passkey": ("Passkey retrieval accuracy by position scheme and context length (mean over "
                "needle depths and seeds; n/a = the scheme cannot run at that length).",
                "各位置编码方案在不同上下文长度下的 passkey 检索准确率（对插入深度与种子取均值；n/a 表示"
                "该方案无法在此长度运行）。"),
    # rope_relative_error as drawn (`html.figure_caption`): by dtype where the position suite's
    # relative-error run is stored (at --size full), else the float64 reference alone
    "rope_relative_error": ("RoPE's relative-position identity in floating point: max "
                            "|q_m·k_n − q_(m+s)·k_(n+s)| for random q, k against the shift s, "
                            "by dtype ({dtypes}). Exact up to float64 rounding; in low precision "
                            "the error grows with the absolute position (× on the top edge: "
                            "NaN/inf).",
                            "浮点数中的 RoPE 相对位置恒等式：随机 q、k 下 max |q_m·k_n − q_(m+s)·k_(n+s)| "
                            "随位移 s 的变化（按 dtype：{dtypes}）。float64 中仅有舍入误差；低精度下误差随绝对位置增大"
                            "（顶边 × 表示 NaN/inf）。"),
    "rope_relative_error:float64": ("RoPE's relative-position identity in float64 (the "
                                    "reference blocklab verify checks): max "
                                    "|q_m·k_n − q_(m+s)·k_(n+s)| for random q, k against the "
                                    "shift s, exact up to rounding. The low-precision dtypes are "
                                    "measured by the position suite at --size full only.",
                                    "float64 中的 RoPE 相对位置恒等式（blocklab verify 所检查的参照）：随机 q、k 下 "
                                    "max |q_m·k_n − q_(m+s)·k_(n+s)| 随位移 s 的变化，仅有舍入误差。"
                                    "低精度 dtype 由 position 实验只在 --size full 测量。"),
    "prefill_split": ("Share of prefill matmul FLOPs by part (attention projections, scores "
                      "and values, FFN, lm_head) against the prompt length, per model.",
                      "预填充矩阵乘 FLOPs 按部分（注意力投影、分数与加权、FFN、lm_head）的占比随提示长度的变化，"
                      "按模型分别给出。"),
    "decode_split": ("FLOPs of one decode step by part against the context length: the "
                     "score/value part grows linearly, the FFN part is constant.",
                     "单个解码步的 FLOPs 按部分随上下文长度的变化：分数/加权部分线性增长，FFN 部分不变。"),
    "kv_cache": ("KV-cache bytes (bf16, batch 1) against the context length, with each model's "
                 "weight bytes (dotted) for scale.",
                 "KV 缓存字节数（bf16，batch 1）随上下文长度的变化，虚线为各模型权重字节数作参照。"),
}


# A part's decision in the ledger's one-line view, short enough for its column.
DECISION_SHORT: dict[str, tuple[str, str]] = {
    "confirmed": ("confirmed", "成立"), "not-reproduced-at-this-scale": ("not reproduced", "未复现"),
    "contradicted-at-this-scale": ("contradicted", "相反"), "inconclusive": ("inconclusive", "尚无定论"),
    "run": ("run", "已运行"), "refuted": ("refuted", "不成立"),
}


def t(key: str, lang: str) -> str:
    """The string `key` in `lang` ("en" or "zh")."""
    en, zh = STRINGS[key]
    return zh if lang == "zh" else en


def caption(key: str, lang: str) -> str:
    en, zh = CAPTIONS[key]
    return zh if lang == "zh" else en
