"""Whether a message is about training with PyTorch at all: the scope rules of the reader.

``scope_of`` answers ``out_of_scope`` (or None) before any intent rule runs
(``bot.understand.intent.read_intent``): inference and serving (vLLM, KV cache, deployment, a
model's generation speed with no training word), TPU/JAX/XLA and other frameworks, a model that
learns badly (a loss that does not fall) unless the run itself fails (a hang, NCCL, an OOM), a
paper's figures with no run of the person's, text that only contains ML words, and messages with
none of the in-scope vocabulary (``TRAINING_SYSTEM_WORDS``) and no setup. The in-scope vocabulary
has its one home here; ``bot.parse`` reads it for its on-topic check. ``serving_subject`` and
``names_inference`` are the one home of "is this message about inference", read by the passages
an answer may quote (bot.knowledge.answering) and the playbook's serving entry.
"""

from __future__ import annotations

import re

from bot.understand.sentences import QUESTION, sentences_of

_I = re.I | re.A

_INFERENCE = re.compile(r"vllm|\btgi\b|text-generation-inference|sglang|tensorrt|triton inference|\bserv(?:e|ing)\b|"
                        r"部署|推理|inference|\bdeploy|llama\.cpp|\bollama\b|gguf|kv[- ]?cache|tokens? per second|"
                        r"generat(?:e|ion) (?:speed|throughput)|max-model-len|gpu-memory-utilization|tensor_parallel_size|"
                        r"\bLLM\(|SamplingParams", _I)
_TRAIN = re.compile(r"训练|微调|精调|fine-?tun|finetun|\btrain|sft\b|pretrain|预训练|lora|grpo|ppo|dpo|rlhf|backward|"
                    r"optimizer|优化器|梯度|gradient", _I)
_QUALITY = re.compile(r"loss.{0,10}(?:下不去|不降|not decreas|nan\b|diverg)|胡说八道|不收敛|效果(?:差|不好)", _I)
# a failure of the distributed run beside a quality word ("loss 变成 nan 后其他卡卡住", "NaN on one rank,
# the others hang", fp16 overflow): the training system's problem, in scope
_SYSTEM_FAILURE = re.compile(r"(?<![a-z])hang|\bstuck\b|freez|deadlock|卡住|卡死|卡着|不动|\branks?\b|nccl|timed? ?out|超时|"
                             r"out of memory|\boom\b|爆显存|overflow|溢出|loss[ _]?scal|grad[ _]?scaler|其[他余]的?(?:卡|gpu|显卡)|"
                             r"other (?:\d+ |two |three |seven )?(?:gpus|cards|ranks)", _I)
# the loss went NaN/inf on a multi-GPU launch: the run's problem (mixed precision beside DeepSpeed,
# one rank's data), not a model that learns badly; a loss that only falls slowly stays quality
NAN_LOSS = re.compile(r"loss[^。，,.;\n]{0,10}?\b(?:nan|inf)\b|\bnan loss", _I)
_MULTI_GPU_LAUNCH = re.compile(r"--multi_gpu|--num_processes|--nproc_per_node|\btorchrun\b|accelerate launch|deepspeed --|"
                               r"多卡|多机|multi-?gpu|multiple gpus|several gpus", _I)
_PAPER = re.compile(r"(?:your|the) (?:web page|paper|readme|blog)|you (?:say|said) you used|论文里", _I)
_OWN_OOM = re.compile(r"out of memory|\boom\b|outofmemory|显存不足|显存不够|爆显存", _I)
_FIRST_PERSON = re.compile(r"\bi (?:use|have|try|tried|ran|run|am)\b|\bi'(?:ve|m|d)\b|\bmy\b|\b(?:we|our)\b|我们|我的|我在|我用", _I)
# the asker reports a run of their own by its figures (an epoch's minutes, a link's speed, "slower than"),
# with or without "I": "each epoch takes 9 minutes while the paper reports 3", "比论文里慢三倍"
_OWN_MEASUREMENT = re.compile(r"\d+(?:\.\d+)?\s*(?:min(?:ute)?s?\b|hours?\b|s/it|it/s|秒|分钟|小时|gbps|gb/s)|"
                              r"takes? \d|\b(?:slower|faster)\b|\bi\b|慢|快|一半", _I)
_OTHER_STACK = re.compile(r"\btpu\b|\bjax\b|\bxla\b|\bflax\b|tensorflow|\bkeras\b|mirroredstrategy|paddle|飞桨|"
                          r"mindspore|\bmlx\b|apple silicon|\bm[1-4] (?:ultra|max|pro)\b|colossalai|geminiplugin|"
                          r"mxnet|oneflow|评测|evaluat(?:e|ion) (?:on|with)", _I)
# a launch of the user's own run on this stack (DeepSpeed, torchrun, accelerate, LlamaFactory)
# (read on the message's own words, where the flags a config reader took are blanked with GAP)
_OWN_TORCH_LAUNCH = re.compile(r"(?:^|\s)(?:deepspeed|torchrun|accelerate launch|llamafactory-cli|swift sft)[\s\u2591]+-{0,2}\w|"
                               r"--deepspeed\b|python -m torch\.distributed", _I | re.M)
# other stacks that are other hardware or compilers, never a mere comparison beside a CUDA run
_NOT_CUDA = re.compile(r"tpu|jax|xla|flax|mlx|apple|m[1-4] ", _I)
# --- the in-scope vocabulary --------------------------------------------------------------------
# The words of a distributed training run: strategies, launchers, collectives, cards, memory, the
# training loop, model families. One list read twice: the scope rule below (a message with none of
# them and no setup is out of scope) and bot.parse's on-topic check, each with its own few extras.
TRAINING_SYSTEM_WORDS = (
    r"ddp|fsdp|hsdp|zero|deepspeed|megatron|分布式|distributed|并行|parallel|shard|分片|多卡|单卡|多机|"
    r"\d\s*卡|显卡|显存|\boom\b|nccl|torchrun|a100|h100|4090|offload|卸载|all-?reduce|all-?gather|节点|"
    r"bf16|fp16|lora|训练|微调|fine-?tun|finetun|\btrain|gradient|accumulat|梯度|累积|优化器|optimizer|"
    r"精度|precision|参数|llama|qwen|mistral|pytorch|torch|npu|昇腾|ascend|"
    # the words of a distributed run's hang or its epochs (batch f class 1)
    r"\branks?\b|主进程|进程组|init_process_group|gloo|epoch|dataloader|\bcollectives?\b|集合通信|"
    r"其[他余]的?(?:卡|gpu|显卡)|"
    # errors only a distributed launch raises, which often come with no other distributed word:
    # the elastic agent's wrapper (torch.distributed.elastic ChildFailedError, "failed (exitcode"),
    # the rendezvous store's port taken (c10d's TCPStore raises "RuntimeError: Address already in
    # use"; a web server's "OSError: [Errno 98]" is not this), the rendezvous address variables
    r"childfailederror|elastic|rendezvous|\bc10d\b|tcpstore|master_(?:port|addr)|"
    r"runtimeerror:\s*address already in use|eaddrinuse")
_DIST = re.compile(TRAINING_SYSTEM_WORDS + r"|gpus?\b|vram|out of memory|accelerate|nodes?\b|checkpointing|重计算|"
                   r"batch|micro|\bsgd\b|adam|params?\b|seq|context|序列|上下文|\d+(?:\.\d+)?\s*b\b", _I)
_OFF_TOPIC = re.compile(r"train(?:ing)? (?:my|a|the|our) (?:dog|cat|puppy|horse|parrot|team|staff|voice|muscles?)|"
                        r"memory foam|mattress|床垫|recipe for (?:tomato|soup|cake|bread|pasta|chicken)|菜谱|"
                        r"怎么做.{0,6}(?:吃|菜|汤|肉)|红烧|天气|weather|股票|stock price|"
                        r"horoscope|football|足球|电影|movie|训练我的狗|训狗|我家的狗|狗狗|宠物|小狗", _I)


# the person's own run is inference: "目前测试的是推理", "for inference only"
_INFERENCE_RUN = re.compile(r"(?:测试|用|做|跑|试|部署)的?(?:是|只是)?推理|(?:只|仅)(?:做|跑|用于?)推理|推理(?:时|的时候)|"
                            r"(?:doing|running|only|just|for) inference|at inference time|inference only", _I)
# of _INFERENCE_RUN, the phrasings that say the person's own run is inference (not "推理时", which
# often only compares a training run with inference)
_INFERENCE_OWN_RUN = re.compile(r"(?:测试|用|做|跑|试|部署)的?(?:是|只是)?推理|(?:只|仅)(?:做|跑|用于?)推理|"
                                r"(?:doing|running|only|just|for) inference|inference only", _I)
_CHAT_MODEL = re.compile(r"\d+(?:\.\d+)?\s*b-(?:chat|instruct|it)\b", _I)
_RUN_VERB = re.compile(r"跑|运行|加载|load(?:ing)?\b|\brun(?:ning)?\b|启动|部署", _I)
_TRAINING_WORDS = re.compile(r"训练|微调|精调|fine-?tun|finetun|\btrain|sft\b|lora|grpo|ppo|dpo|rlhf|backward|梯度|gradient|optimizer|优化器|"
                             r"ddp|fsdp|zero|deepspeed|shard|分片|offload|卸载|并行|parallel|分布式|distributed|全参|全量|预训练|pretrain|"
                             r"batch|checkpointing|accumulat", _I)


def asks_training_beside_inference(text: str) -> bool:
    """Whether the message's question sentences ask about training while every inference word sits
    outside them: a quoted library warning ("device_map='auto' should be used for inference only",
    "此功能仅用于推理") followed by "how do I train on several GPUs?" is a training question. Only a
    question whose own sentence is about inference or serving is out of scope."""
    questions = [x for x in sentences_of(text) if QUESTION.search(x)]
    if not questions or any(_INFERENCE.search(x) or _INFERENCE_RUN.search(x) for x in questions):
        return False
    return any(_TRAIN.search(x) for x in questions)


# A training run named beside an inference word ("ZeRO-3", "DDP", "epoch", "loss"): the words of
# _TRAIN plus the strategies and the training loop's own terms, never "parallel" (vLLM's tensor
# parallelism is serving)
_TRAINING_RUN = re.compile(_TRAIN.pattern + r"|\b(?:ddp|fsdp|hsdp|zero[- _]?[123]?|deepspeed)\b|\bepochs?\b|\bloss\b|"
                           r"\bbatch[_ ]size\b|micro[_ -]?batch|checkpointing|accumulat|全参|全量|分片", _I)


def names_inference(text: str) -> bool:
    """The message names inference or serving somewhere (vLLM, KV cache, deployment, "推理")."""
    return isinstance(text, str) and bool(_INFERENCE.search(text) or _INFERENCE_RUN.search(text))


def serving_subject(text: str) -> bool:
    """Whether the message's subject is inference or serving rather than training: it names
    inference (vLLM, KV cache, deployment, "推理") and either names no training at all, or one of
    its question sentences asks about inference without a training word. A training question
    that mentions inference in passing ("inference works, training on ZeRO-3 OOMs", "训练时比推理
    多占多少显存") is training. The one home of this judgement: the passages an answer may quote
    (bot.knowledge.answering) and the playbook's serving entry (bot.knowledge.playbook) read it."""
    if not names_inference(text):
        return False
    if not _TRAINING_RUN.search(text):
        return True
    if asks_training_beside_inference(text):
        return False
    questions = [x for x in sentences_of(text) if QUESTION.search(x)]
    return any((_INFERENCE.search(x) or _INFERENCE_RUN.search(x)) and not _TRAINING_RUN.search(x) for x in questions)


# host memory of a run: the process killed for RAM, or a server-sized RAM figure (64 GB and up, not a
# desktop's) ("CPU memory reached 150GB and the job was killed", "内存占用到100多G进程被杀"): the
# person's own training run on host RAM, in scope even with no distributed word
_HOST_RAM_RUN = re.compile(r"(?:\b(?:cpu|host|system|virtual|physical) (?:virtual )?(?:memory|ram)\b|\bram\b|内存)"
                           r"[^.?。？\n]{0,40}?(?:(?<![\d.])(?:6[4-9]|[7-9]\d|\d{3,})(?:\.\d+)?\s*多?\s*g|"
                           r"\bkilled\b|oom[- ]?killer|被(?:系统)?(?:杀|kill)|kill掉)", _I)


# the speed of generating text: tokens per second, decode or generation speed ("40 token/s", "每秒只出20个
# token", "生成速度"). With no training word anywhere it is a served or run model's speed: inference.
_DECODE_SPEED = re.compile(r"\d+(?:\.\d+)?\s*(?:tokens?|toks?)\s*(?:/|per\s*)\s*(?:s|sec|second)\b|\btok/s\b|"
                           r"每秒[^。，,？?\n]{0,6}?(?:个)?\s*tokens?|(?:生成|输出|出字|解码)\s*速度|"
                           r"\b(?:decod(?:e|ing)|generation|output) (?:speed|throughput|rate)\b", _I)


def scope_of(text: str, *, has_setup: bool) -> str | None:
    """``out_of_scope`` when the message is not about training with PyTorch, else None."""
    train = bool(_TRAIN.search(text))
    if _DECODE_SPEED.search(text) and not _TRAINING_RUN.search(text):
        return "out_of_scope"  # how fast a model generates, no training run named: inference
    beside = (_INFERENCE.search(text) or _INFERENCE_RUN.search(text)) and asks_training_beside_inference(text)
    if _INFERENCE_RUN.search(text) and not beside and (_INFERENCE_OWN_RUN.search(text) or serving_subject(text)):
        # the person's own run is inference ("目前测试的是推理"); "推理时" alone only when the
        # message is about serving, not a training run compared with inference ("推理时单卡能跑，
        # ZeRO-3 训练时 OOM": the question is the training run's)
        return "out_of_scope"
    if _RUN_VERB.search(text) and not _TRAINING_WORDS.search(text) and _CHAT_MODEL.search(text):
        return "out_of_scope"  # running a chat model with no training word at all: inference
    if _OFF_TOPIC.search(text) and not re.search(r"fsdp|ddp|deepspeed|zero|gpu", text, _I) or \
            _OFF_TOPIC.search(text) and re.search(r"train(?:ing)? (?:my|a|the|our) (?:dog|cat|puppy)|mattress|memory foam|"
                                                  r"训练我的狗|训狗|狗狗|宠物", text, _I):
        return "out_of_scope"
    if _QUALITY.search(text) and not _SYSTEM_FAILURE.search(text) and \
            not (NAN_LOSS.search(text) and _MULTI_GPU_LAUNCH.search(text)):
        return "out_of_scope"  # a model that learns badly; a NaN that hangs the other ranks is the run's
    other = _OTHER_STACK.search(text)
    if other and not (_OWN_TORCH_LAUNCH.search(text) and not _NOT_CUDA.search(other.group(0))):
        # another framework is the subject, unless it is only a comparison beside the user's own
        # DeepSpeed/torchrun run ("Colossalai是可以的", DeepSpeedExamples#411)
        return "out_of_scope"
    # a paper's figure beside the person's own run out of memory is their run (batch f class 5)
    if _PAPER.search(text) and not _FIRST_PERSON.search(text) and not _OWN_OOM.search(text) \
            and not _OWN_MEASUREMENT.search(text):
        return "out_of_scope"
    if _INFERENCE.search(text) and not beside and not (train and re.search(r"训练|微调|精调|\bsft\b|fine-?tun|finetun|\btrain", text, _I)
                                         and not re.search(r"推理部署|how to .{0,20}(?:serve|deploy)|如何.{0,10}推理", text, _I)):
        return "out_of_scope"
    if not _DIST.search(text) and not has_setup and not _HOST_RAM_RUN.search(text):
        return "out_of_scope"
    return None
