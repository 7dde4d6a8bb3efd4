"""One short fit whose manifest goes to $FASTREPRO_RUNS; prints the manifest's path.

python tests/manifest_job.py digits DATA SEED LR   a digits CNN on the PNG folder DATA
python tests/manifest_job.py tabular START         a wine learner that starts fitting at unix time START
"""
import sys, time, warnings
warnings.filterwarnings('ignore')
from fastai.vision.all import accuracy
from fastrepro.all import repro_learner, digits_dblock, digits_cnn, tabular_frame, ReproCallback, set_seed

def digits(data, seed, lr):
    learn = repro_learner(digits_dblock(augment=False), data, seed=int(seed), model=digits_cnn, num_workers=0, metrics=accuracy)
    with learn.no_bar(), learn.no_logging(): learn.fit(1, float(lr))
    return learn

def tabular(start):
    from fastai.tabular.all import TabularDataLoaders, Normalize, tabular_learner
    df = tabular_frame('wine'); set_seed(0)
    dls = TabularDataLoaders.from_df(df, y_names='target', cont_names=list(df.columns[:-1]), procs=[Normalize], bs=32)
    learn = tabular_learner(dls, layers=[8], metrics=accuracy, cbs=ReproCallback(seed=0))
    time.sleep(max(0., float(start) - time.time()))  # all processes finish their fits at about the same moment
    with learn.no_bar(), learn.no_logging(): learn.fit(1, 1e-2)
    return learn

if __name__ == '__main__':
    learn = {'digits': digits, 'tabular': tabular}[sys.argv[1]](*sys.argv[2:])
    print(learn.repro_manifest)
