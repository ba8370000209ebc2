"""Fine-tune a transformers model for NER, as a transformers user does (first-token labels,
AdamW, linear decay), and save it with `save_pretrained`: a hub-style NER checkpoint.

Usage: python hf_finetune_ner_child.py BASE_DIR TRAIN.tsv OUT_DIR SENTENCES STEPS"""

import sys

import torch
import transformers


def read_tsv(path, limit):
    sentences, words, tags = [], [], []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip():
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            continue
        word, tag = line.split("\t")[:2]
        words.append(word)
        tags.append(tag if tag == "O" else f"{tag[0]}-Disease")
    if words:
        sentences.append((words, tags))
    return sentences[:limit]


def main(base, train, out, limit, steps):
    torch.manual_seed(0)
    sentences = read_tsv(train, int(limit))
    labels = ["O", "B-Disease", "I-Disease"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(base)
    model = transformers.AutoModelForTokenClassification.from_pretrained(
        base, num_labels=3, id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, 0, int(steps))
    model.train()
    batch = 16
    for step in range(int(steps)):
        chunk = [sentences[(step * batch + i) % len(sentences)] for i in range(batch)]
        encoded = tokenizer([w for w, _ in chunk], is_split_into_words=True, truncation=True, max_length=128,
                            padding=True, return_tensors="pt")
        targets = []
        for row, (_, tags) in enumerate(chunk):
            previous, row_labels = None, []
            for word in encoded.word_ids(row):
                row_labels.append(-100 if word is None or word == previous else labels.index(tags[word]))
                previous = word
            targets.append(row_labels)
        loss = model(**encoded, labels=torch.tensor(targets)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
